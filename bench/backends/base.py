"""The judge protocol every backend implements, and the records that cross it.

The runner (``bench/decide.py``) owns batching, concurrency limits, retries, caching, timing and
the progress bar; a backend only turns inputs into outputs. A backend implements ONE of:

- ``decide_batch(items) -> list[RawOutput]``: synchronous, outputs in input order (baselines,
  sklearn, embedding, transformers, vllm);
- ``async adecide(item) -> RawOutput``: one request at a time, awaited concurrently by the runner
  up to the judge's ``concurrency`` (openai, hf-inference).

A transient failure (HTTP 429, 5xx, timeout) raises ``RetryableError`` (with ``retry_after`` when
the server said so); the runner retries with exponential backoff and jitter. Any other exception is
recorded as an error for that decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from bench.schema import DecisionPoint
from bench.verdict import Verdict


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
