"""The judge protocol every backend implements, and the records that cross it.

The runner (``bench.judging.runner``) owns batching, concurrency limits, retries, timing and
warm-up; local evaluation (``bench.judging.local``) owns caching, files and the progress bar; a
backend only turns inputs into outputs. A backend is built by its factory from a validated
judges.toml row (``JudgeSpec``) and implements ONE of:

- ``decide_batch(items) -> list[RawOutput]``: synchronous, outputs in input order (baselines,
  sklearn, embedding, transformers, vllm);
- ``async adecide(item) -> RawOutput``: one request at a time, awaited concurrently by the runner
  up to the judge's ``concurrency`` (openai, hf-inference).

Optional hooks, each a protocol the caller checks with ``isinstance``: ``fit(dev_points)``
(learned baselines, called before any decision), ``close()`` / ``aclose()`` (release models or
connection pools), ``tokenizer`` (for a token budget) and ``device`` (recorded in the run line).

A transient failure (HTTP 429, 5xx, timeout) raises ``RetryableError`` (with ``retry_after`` when
the server said so); the runner retries with exponential backoff and jitter. Any other exception is
recorded as an error for that decision. A factory that cannot run here raises ``SkipJudge`` with
what to install or set.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from bench.core.jsonl import content_hash
from bench.core.schema import DecisionPoint
from bench.core.verdict import Verdict

MAX_CONCURRENCY = 1024
"""Most requests a judge may keep in flight (``concurrency``): each is a worker coroutine and,
for HTTP backends, a pooled connection; the runner never starts more workers than decisions."""

MAX_BATCH_SIZE = 65_536
"""Most decisions one batched call may take (``batch_size``)."""


@dataclass(frozen=True)
class JudgeSpec:
    """One validated ``[[judge]]`` row."""

    id: str
    """Stable slug; names the predictions folder."""
    backend: str
    """Registry name of the backend (``bench.judging.backends``)."""
    display_name: str = ""
    """Name shown on the leaderboard (defaults to the id)."""
    model: str = ""
    """Model id or local path (backend-specific; empty for baselines)."""
    revision: str = ""
    """Model revision (commit or tag) for hub models; empty for none."""
    subfolder: str = ""
    """Subfolder inside the model repository; empty for none."""
    prompt: str = ""
    """Renderer template name (``bench.prompts.renderer.TEMPLATES``); required for generative
    backends."""
    parser: str = ""
    """Verdict parser name (``bench.prompts.parsers.PARSERS``); required for generative
    backends."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Backend options, validated against the backend's declared params."""
    concurrency: int = 1
    """Requests in flight at once (async backends)."""
    batch_size: int = 1
    """Items per call (batched backends)."""
    usd_per_m_input: float | None = None
    """Price in USD per million input tokens, when known."""
    usd_per_m_output: float | None = None
    """Price in USD per million output tokens, when known."""
    open_weights: bool | None = None
    """True when the weights are public."""
    license: str = ""
    """Licence of the model or code."""
    submitted_by: str = ""
    """Who added the row."""
    notes: str = ""
    """Free notes."""
    role: Literal["judge", "probe"] = "judge"
    """``judge`` (ranked) or ``probe`` (a shortcut probe: a reference line, never ranked)."""
    fitted_on_dev: bool = False
    """True when the judge was fitted or tuned on this benchmark's dev split (learned baselines
    always are); the leaderboard marks it and lets readers filter to zero-shot judges."""
    scoring: Literal["generate", "logprobs"] = "generate"
    """``generate``: the parser reads generated text; ``logprobs``: the verdict comes from the
    probabilities of the verdict words after the parser's answer prefix (bench.prompts.scoring;
    backends that declare it)."""
    line: int = 0
    """Line of the row's ``[[judge]]`` header in its file (for messages)."""
    generative: bool = True
    """Copied from the backend: True when it returns text for the parser."""

    @property
    def name(self) -> str:
        """The display name, or the id."""
        return self.display_name or self.id

    def config(self) -> dict[str, Any]:
        """The fields that change a judge's outputs (what the config hash covers). Display name,
        notes, prices, licence, concurrency and batch size do not change outputs and are left out,
        so editing them keeps the cache."""
        return {
            "backend": self.backend,
            "model": self.model,
            "revision": self.revision,
            "subfolder": self.subfolder,
            "prompt": self.prompt,
            "parser": self.parser,
            "params": dict(self.params),
            # only when set, so rows written before the key existed keep their config hash
            **({"scoring": self.scoring} if self.scoring != "generate" else {}),
        }

    def config_hash(self, template_digest: str = "") -> str:
        """Hash of ``config()`` plus the prompt template's own digest, so a changed template text
        starts a new predictions file too."""
        return content_hash({**self.config(), "template": template_digest})


def toml_types(cls: type, skip: Collection[str] = ()) -> dict[str, tuple[type, ...]]:
    """Field -> the TOML value types it accepts, read from a dataclass's annotations, so a row's
    keys and types are declared once, by the dataclass (``JudgeSpec``; a backend's params class).
    ``X | None`` accepts X; a Literal of strings accepts a string; ``float`` accepts an integer
    too; a mapping accepts a table, a sequence an array."""
    hints = typing.get_type_hints(cls)
    return {f.name: _toml(hints[f.name]) for f in dataclasses.fields(cls) if f.name not in skip}


def _toml(t: Any) -> tuple[type, ...]:
    origin = typing.get_origin(t)
    if origin is typing.Union or origin is types.UnionType:
        out: tuple[type, ...] = ()
        for a in typing.get_args(t):
            out += () if a is type(None) else _toml(a)
        return out
    if origin is Literal:
        return tuple(dict.fromkeys(type(a) for a in typing.get_args(t)))
    if t is float:
        return (int, float)
    if t in (str, int, bool):
        return (t,)
    if t is dict or origin in (dict, collections.abc.Mapping):
        return (dict,)
    if t is list or origin in (list, tuple, collections.abc.Sequence):
        return (list,)
    raise TypeError(f"no TOML type for the annotation {t!r}")


@dataclass(frozen=True)
class JudgeInput:
    """What a backend receives for one decision point."""

    dp: DecisionPoint
    """The decision point (pre-execution view only)."""
    messages: tuple[Mapping[str, str], ...] = ()
    """The rendered chat messages (role/content) for generative backends; empty for scorers."""


@dataclass(frozen=True)
class RawOutput:
    """What a backend returns for one decision point."""

    text: str | None = None
    """Generated text, to be parsed by the judge's parser."""
    verdict: Verdict | None = None
    """A verdict given directly (scorers such as baselines and sklearn); bypasses the parser."""
    tokens_in: int | None = None
    """Prompt tokens, when known."""
    tokens_out: int | None = None
    """Completion tokens, when known."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Backend-specific details worth keeping (finish reason, model revision)."""


class RetryableError(Exception):
    """A transient failure the runner should retry (429, 5xx, timeout)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SkipJudge(Exception):
    """Raised by a backend factory when the judge cannot run here (missing optional dependency,
    weights or API key); the message says what to install or set. The runner skips the judge and
    reports the reason."""


@runtime_checkable
class BatchBackend(Protocol):
    """A synchronous batched backend."""

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """Outputs in input order, one per item."""
        ...


@runtime_checkable
class AsyncBackend(Protocol):
    """An asynchronous one-at-a-time backend."""

    async def adecide(self, item: JudgeInput) -> RawOutput:
        """One output for one item."""
        ...


Backend = BatchBackend | AsyncBackend
"""What a factory returns."""


class BackendFactory(Protocol):
    """Builds a backend from a validated judge row (raises SkipJudge when it cannot run here)."""

    def __call__(self, judge: JudgeSpec) -> Backend: ...


@runtime_checkable
class Fittable(Protocol):
    """A learned baseline: fitted on the dev split's gold before it answers anything."""

    def fit(self, points: Sequence[DecisionPoint]) -> None:
        """Fit on dev decision points (gold attached)."""
        ...


@runtime_checkable
class Closable(Protocol):
    """A backend holding resources to release after the run (a model, a process)."""

    def close(self) -> None:
        """Release them."""
        ...


@runtime_checkable
class AsyncClosable(Protocol):
    """An async backend holding a connection pool, closed on the loop that used it."""

    async def aclose(self) -> None:
        """Close it."""
        ...


@runtime_checkable
class HasTokenizer(Protocol):
    """A backend whose tokenizer can measure a ``prompt_budget_tokens`` budget."""

    tokenizer: Any
    """An object with ``encode(text)`` (a Hugging Face tokenizer)."""


@runtime_checkable
class HasDevice(Protocol):
    """A backend that runs on a named device (recorded with the run's hardware)."""

    device: str
    """``cpu``, ``cuda``, ``cuda:1``..."""


@runtime_checkable
class HasWeights(Protocol):
    """A backend that knows what weights it loaded (recorded in the run line)."""

    weights: Mapping[str, Any]
    """Format, file and sha256 of what was loaded (and the hub commit, when known)."""
