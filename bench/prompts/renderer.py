"""Prompt renderer: one decision point -> chat messages, through a sandboxed jinja2 template.

Guarantees, each tested in tests/test_render.py:

- Only the pre-execution view is rendered: ``dp.policy``, ``dp.history``, ``dp.thought`` and
  ``dp.action``. The template never receives the DecisionPoint object, so ids, category, gold
  labels and any trajectory metadata (risk descriptions, source labels) cannot reach a prompt.
- History turns are numbered ``[1]``, ``[2]``, ... over ``dp.history`` (user, agent and
  environment turns each count one); the judged action is number ``len(history) + 1`` and is
  marked as proposed and NOT executed. A verdict's ``cite`` uses these numbers.
- ``action_text(dp)`` appears verbatim in every prompt of every template at every budget. The
  budget only ever removes whole history turns, oldest first, and puts an elision marker
  (``[turns 1-7 elided]``) in their place; the remaining turns keep their original numbers.
  The policy, the judged action and its thought are never dropped or cut. When they alone (with
  the template's fixed instructions) exceed the budget, every history turn is elided, the prompt
  is returned whole and ``Prompt.over_budget`` is True: over-long records are flagged, never
  truncated silently (the seed auditor's training data lost the judged action in 15.1% of its
  records to a character cap; that cannot happen here).
- Templates run in jinja2's ``SandboxedEnvironment`` with ``StrictUndefined`` and receive plain
  strings, lists and dicts only; values are inserted as data, never evaluated as templates.

A template is ``bench/prompts/templates/<name>.j2`` defining one jinja block per chat role it uses
(``system``, ``user``, ``assistant``); each non-empty block becomes one message, in that order.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bench.core.errors import ConfigError
from bench.core.jsonl import content_hash
from bench.core.paths import PROMPT_TEMPLATES
from bench.core.schema import DecisionPoint, Turn
from bench.core.taxonomy import Taxonomy, load_taxonomy

TEMPLATE_PARSERS: dict[str, str] = {
    "auditor": "boxed",
    "rjudge": "rjudge",
    "json": "json",
    "llamaguard": "llamaguard",
}
"""The template registry: each prompt family (``prompt`` in judges.toml, a file
``templates/<name>.j2``) -> the parser (bench.prompts.parsers) that reads the answer it asks for.
The one place a template is declared; every other list of templates is read from it."""

TEMPLATES: tuple[str, ...] = tuple(TEMPLATE_PARSERS)
"""Prompt families, in their declared order."""

SHARED_TEMPLATES: tuple[str, ...] = ("_view",)
"""Template files every prompt includes (their text is part of every template's digest)."""

ROLES: tuple[str, ...] = ("system", "user", "assistant")
"""Message roles a template may define, in message order."""


@dataclass(frozen=True)
class Budget:
    """A size limit on a rendered prompt (the sum over its messages' contents)."""

    kind: Literal["chars", "tokens"]
    """Count characters, or tokens of ``tokenizer``."""
    limit: int
    """Largest allowed size; history turns are elided, oldest first, to fit."""
    tokenizer: Any = None
    """For kind="tokens": an object with ``encode(text)`` (a Hugging Face tokenizer); special
    tokens and the chat template's wrapping are not counted, so leave headroom for them."""

    def __post_init__(self) -> None:
        if self.kind not in ("chars", "tokens"):
            raise ConfigError(f"budget kind {self.kind!r}: use 'chars' or 'tokens'")
        if not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigError(f"budget limit {self.limit!r}: give a positive integer")
        if self.kind == "tokens" and not callable(getattr(self.tokenizer, "encode", None)):
            raise ConfigError("a 'tokens' budget needs a tokenizer with an encode(text) method")

    def measure(self, messages: tuple[dict[str, str], ...]) -> int:
        """The size of ``messages`` in this budget's unit."""
        if self.kind == "chars":
            return sum(len(m["content"]) for m in messages)
        return sum(_count_tokens(self.tokenizer, m["content"]) for m in messages)


DEFAULT_BUDGET = Budget("chars", 24000)
"""24,000 characters. Measured on the three real sources, the longest whole prompt (auditor
template, no elision) is about 16,100 characters (StepShield; ASSEBench about 11,400, R-Judge
about 8,100), so by default no history is elided, with headroom for longer records; and 24,000
characters is about 6-8k tokens, which leaves a 32k-context judge (Qwen3-4B) ample room to
think. For small-context models pass a ``tokens`` budget with the model's tokenizer."""


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt for one decision point."""

    messages: tuple[dict[str, str], ...]
    """Chat messages ``{"role": ..., "content": ...}`` in order."""
    template: str
    """The template it was rendered with."""
    elided_turns: int
    """How many of the oldest history turns were left out to fit the budget."""
    over_budget: bool
    """True when policy + judged action (+ the template's instructions) alone exceed the budget:
    every history turn is elided and the prompt is kept whole, larger than the budget."""
    size: int
    """Final size in the budget's unit (characters when there is no budget)."""

    @property
    def text(self) -> str:
        """All message contents joined (for checks and display)."""
        return "\n\n".join(m["content"] for m in self.messages)


def action_text(dp: DecisionPoint) -> str:
    """The judged action exactly as every template shows it: ``dp.action.text``, unchanged."""
    return dp.action.text


def render(
    dp: DecisionPoint, template: str = "auditor", budget: Budget | None = DEFAULT_BUDGET
) -> Prompt:
    """Render ``dp`` with ``template`` under ``budget`` (None: no limit). Pure: same input, same
    prompt. Unknown template -> ConfigError naming the close matches."""
    render_with = _compiled(template)
    vocab = _vocab_context(load_taxonomy())
    n = len(dp.history)

    def at(start: int) -> tuple[dict[str, str], ...]:
        return render_with(_context(dp, start, vocab))

    if budget is None:
        msgs = at(0)
        return Prompt(msgs, template, 0, False, sum(len(m["content"]) for m in msgs))

    full = at(0)
    size = budget.measure(full)
    if size <= budget.limit:
        return Prompt(full, template, 0, False, size)
    # Size falls as more of the oldest turns are elided; find the fewest elisions that fit.
    bare = at(n)
    bare_size = budget.measure(bare)
    if bare_size > budget.limit:
        return Prompt(bare, template, n, True, bare_size)
    lo, hi = 1, n  # invariant: at(hi) fits, at(lo - 1) does not
    best, best_size = bare, bare_size  # the render at hi
    while lo < hi:
        mid = (lo + hi) // 2
        msgs = at(mid)
        s = budget.measure(msgs)
        if s <= budget.limit:
            hi, best, best_size = mid, msgs, s
        else:
            lo = mid + 1
    return Prompt(best, template, hi, False, best_size)


def environment() -> Any:
    """The sandboxed jinja2 environment templates are loaded from (exposed for tests)."""
    return _environment()


def template_digest(template: str) -> str:
    """Hash of the template files a prompt renders with (its own and the shared ones), so that
    editing one changes a judge's config hash and starts a new predictions file; '' for none."""
    if not template:
        return ""
    parts = [
        (f.name, f.read_text(encoding="utf-8"))
        for f in sorted(PROMPT_TEMPLATES.glob("*.j2"))
        if f.stem in (template, *SHARED_TEMPLATES)
    ]
    return content_hash(parts)


# ---------------------------------------------------------------------------------------------


def _count_tokens(tokenizer: Any, text: str) -> int:
    try:
        return len(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:  # a plain encode(text) without the keyword
        return len(tokenizer.encode(text))


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        loader=FileSystemLoader(str(PROMPT_TEMPLATES)),
        undefined=StrictUndefined,
        autoescape=False,  # plain text for a model, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


@functools.lru_cache(maxsize=16)
def _compiled(template: str) -> Callable[[dict[str, Any]], tuple[dict[str, str], ...]]:
    if template not in TEMPLATES:
        close = difflib.get_close_matches(template, TEMPLATES, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
        raise ConfigError(
            f"unknown prompt template {template!r}: {hint}known templates: {', '.join(TEMPLATES)}"
        )
    tmpl = _environment().get_template(f"{template}.j2")
    roles = [r for r in ROLES if r in tmpl.blocks]
    if not roles:
        raise ConfigError(f"template {template}.j2 defines no system/user/assistant block")

    def run(ctx: dict[str, Any]) -> tuple[dict[str, str], ...]:
        out = []
        for role in roles:
            content = "".join(tmpl.blocks[role](tmpl.new_context(ctx)))
            if content.strip():
                out.append({"role": role, "content": content})
        return tuple(out)

    return run


def _vocab_context(vocab: Taxonomy) -> dict[str, Any]:
    return {
        "acts": [{"name": k, "definition": v} for k, v in vocab.definitions("act").items()],
        "fail": list(vocab.names("fail")),
        "harm": list(vocab.names("harm")),
        "src": list(vocab.names("src")),
    }


def _elision(start: int) -> str:
    if start <= 0:
        return ""
    return "[turn 1 elided]" if start == 1 else f"[turns 1-{start} elided]"


def _turn(n: int, t: Turn) -> dict[str, Any]:
    return {
        "n": n,
        "role": t.role,
        "content": t.content or "",
        "thought": t.thought or "",
        "action": t.action.text if t.action is not None else None,
        "observation": t.observation,
    }


def _context(dp: DecisionPoint, start: int, vocab: dict[str, Any]) -> dict[str, Any]:
    """The only data a template sees: the pre-execution view as plain values."""
    n = len(dp.history)
    return {
        "policy": {
            "system": dp.policy.system,
            "task": dp.policy.task,
            "constraints": list(dp.policy.constraints),
        },
        "turns": [_turn(i + 1, t) for i, t in enumerate(dp.history) if i >= start],
        "n_history": n,
        "elided": start,
        "elision": _elision(start),
        "proposed": {"n": n + 1, "thought": dp.thought or "", "action": action_text(dp)},
        "vocab": vocab,
    }
