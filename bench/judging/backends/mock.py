"""An in-process mock judge (like Inspect's ``mockllm``): canned answers, no model, no HTTP.

For runner and pipeline tests and for trying a prompt/parser pair offline. It is generative: its
text goes through the row's parser like a real model's.

- ``outputs``: the answers to give; decision ``id`` gets ``outputs[sha256(id) mod n]``, so an
  answer never depends on run order, batch size or resumption. Default: one valid auditor box
  that says CONTINUE.
- ``latency_s``: seconds each call sleeps (0 by default), to exercise timing.
- ``async``: true makes it an ``AsyncBackend`` (awaited up to the row's ``concurrency``);
  otherwise it answers batches.
- ``tokens``: true reports token counts (characters / 4), so cost columns can be tested.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.core.errors import ConfigError
from bench.judging.backends import backend
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput

DEFAULT_OUTPUT = "\\boxed{act:CONTINUE, risk:5, fail:NONE, harm:NONE, src:NONE, cite:NONE}"
"""The answer when a row sets no ``outputs``."""

PARAMS: dict[str, type | tuple[type, ...]] = {
    "outputs": list,
    "latency_s": float,
    "async": bool,
    "tokens": bool,
    "prompt_budget": int,
}
"""Declared params."""


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    outputs = params.get("outputs", [DEFAULT_OUTPUT])
    if not outputs or not all(isinstance(o, str) for o in outputs):
        raise ConfigError(f"judge {judge_id!r}: params.outputs must be a non-empty list of strings")
    if float(params.get("latency_s", 0.0)) < 0:
        raise ConfigError(f"judge {judge_id!r}: params.latency_s must not be negative")


class MockJudge:
    """Canned answers (BatchBackend)."""

    def __init__(self, outputs: Sequence[str], latency_s: float, tokens: bool) -> None:
        self.outputs = tuple(outputs)
        self.latency_s = latency_s
        self.tokens = tokens

    def answer(self, item: JudgeInput) -> RawOutput:
        """The canned answer for one decision."""
        h = int.from_bytes(hashlib.sha256(item.dp.id.encode("utf-8")).digest()[:8], "big")
        text = self.outputs[h % len(self.outputs)]
        if not self.tokens:
            return RawOutput(text=text)
        prompt = sum(len(m.get("content", "")) for m in item.messages)
        return RawOutput(text=text, tokens_in=prompt // 4, tokens_out=len(text) // 4)

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """One answer per item, in order."""
        if self.latency_s:
            time.sleep(self.latency_s * len(items))
        return [self.answer(i) for i in items]


class AsyncMockJudge(MockJudge):
    """Canned answers, one awaited call at a time (AsyncBackend)."""

    async def adecide(self, item: JudgeInput) -> RawOutput:
        """One answer."""
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self.answer(item)


@backend("mock", params=PARAMS, check=check)
def make(judge: JudgeSpec) -> MockJudge:
    """Build the mock from a judge row."""
    p = judge.params
    check(judge.id, p)
    cls = AsyncMockJudge if p.get("async") else MockJudge
    return cls(
        list(p.get("outputs", [DEFAULT_OUTPUT])),
        float(p.get("latency_s", 0.0)),
        bool(p.get("tokens", False)),
    )
