"""The engine that drives one backend over many decision points.

The runner, not the backend, owns batching, concurrency, retries, timing and warm-up marking; the
caller (``bench.judging.local``) owns caching, files and the progress bar through ``sink``, a
callable that receives each finished ``Prediction`` as soon as it completes (in completion order).

- Async backends (``adecide``): one asyncio loop and a fixed pool of ``concurrency`` worker tasks
  pulling from one shared iterator: no task or thread per decision, no queue, constant memory.
- Batched backends (``decide_batch``): consecutive slices of ``batch_size``; latency is the batch's
  wall time divided by its size, and the batch size is recorded. A batch that fails with a
  non-retryable error is retried one item at a time, so one bad item does not sink its neighbours.

Retries: ``RetryableError`` is retried up to ``RetryPolicy.max_attempts`` calls in all, waiting an
exponential backoff with jitter, or the server's ``retry_after`` (plus a little jitter) when it
gave one. Any other exception is recorded as an error for that decision at once. Either way the
decision is answered or recorded: none is lost, none is written twice.

Warm-up: the first decision of a run is sent alone and marked ``warmup`` so model loading,
compilation and connection set-up are excluded from latency figures. When that first decision
ends in an error (no server listening, a wrong model name), the run stops there
(``RunStats.aborted``) instead of spending retries on every other decision.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from bench.core.jsonl import clean_text
from bench.core.taxonomy import load_taxonomy
from bench.core.verdict import Verdict, checked
from bench.judging.predictions import Prediction
from bench.judging.protocol import (
    MAX_BATCH_SIZE,
    MAX_CONCURRENCY,
    AsyncBackend,
    AsyncClosable,
    BatchBackend,
    JudgeInput,
    RawOutput,
    RetryableError,
)

Parse = Callable[[str, JudgeInput], Verdict]
"""Turns a generative backend's text into a verdict (the judge's parser)."""
Sink = Callable[[Prediction], None]
"""Receives each finished decision."""


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried."""

    max_attempts: int = 5
    """Backend calls per decision at most, the first included."""
    base_s: float = 0.5
    """Backoff before the second attempt; doubles each time."""
    max_s: float = 30.0
    """Cap on one backoff wait."""
    max_retry_after_s: float = 120.0
    """Cap on a server-requested Retry-After wait."""

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based). Equal jitter:
        half the exponential step fixed, half random, so that many workers failing together
        (a 429 burst) do not retry in lockstep."""
        if retry_after is not None and retry_after >= 0:
            wait = min(retry_after, self.max_retry_after_s)
            return wait + rng.uniform(0, 0.1 * wait + 0.01)
        step = min(self.max_s, self.base_s * (2 ** (attempt - 1)))
        return step / 2 + rng.uniform(0, step / 2)


@dataclass
class Attempts:
    """The attempts at one call (a decision, or a batch): the one place that says, after a
    failure, whether to try again and how long to wait first. A rate limit (a ``RetryableError``
    with the server's ``retry_after``) waits what the server asked; a transient error (one
    without) backs off exponentially; any other exception, or the last allowed attempt, stops."""

    policy: RetryPolicy
    """How many attempts, and the backoff."""
    rng: random.Random
    """Jitter source (seeded by the run)."""
    n: int = 0
    """Attempts started so far."""

    def start(self) -> None:
        """Count one more attempt."""
        self.n += 1

    def wait_after(self, e: BaseException) -> float | None:
        """Seconds to wait before the next attempt after ``e``; None to give up."""
        if not isinstance(e, RetryableError) or self.n >= self.policy.max_attempts:
            return None
        return self.policy.delay(self.n, e.retry_after, self.rng)

    def failure(self, e: BaseException) -> str:
        """The error recorded when giving up after ``e``."""
        if isinstance(e, RetryableError):
            kind = "rate limited" if e.retry_after is not None else "transient error"
            return f"gave up after {self.n} attempts ({kind}): {_describe(e)}"
        return _describe(e)


@dataclass
class RunStats:
    """Counts for one run (mutable, filled as decisions complete)."""

    by_status: dict[str, int] = field(default_factory=dict)
    """Decisions per status."""
    attempts: int = 0
    """Backend calls made for single decisions (batched calls count once per item)."""
    busy_s: float = 0.0
    """Summed backend wall time, warm-up excluded."""
    aborted: str | None = None
    """Why the run stopped after its warm-up decision (it failed), else None."""

    def add(self, p: Prediction) -> None:
        """Count one finished decision."""
        self.by_status[p.status] = self.by_status.get(p.status, 0) + 1
        self.attempts += p.attempts
        if not p.warmup and p.latency_s is not None:
            self.busy_s += p.latency_s

    @property
    def total(self) -> int:
        """Decisions finished."""
        return sum(self.by_status.values())


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _verdict_of(item: JudgeInput, out: object, parse: Parse | None) -> tuple[Verdict, str | None]:
    """(verdict before checking, error message): a scorer's verdict is taken as given, a
    generative backend's text goes through the judge's parser; anything else is invalid."""
    if not isinstance(out, RawOutput):
        return Verdict.invalid(f"backend returned {type(out).__name__}, not a RawOutput"), None
    if out.verdict is not None:
        if not isinstance(out.verdict, Verdict):
            kind = type(out.verdict).__name__
            return Verdict.invalid(f"backend returned a {kind} as its verdict"), None
        v = out.verdict
    elif out.text is not None and parse is not None:
        if not isinstance(out.text, str):
            return Verdict.invalid(f"backend returned {type(out.text).__name__} as text"), None
        try:
            v = parse(out.text, item)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - any parser failure is recorded
            return (
                Verdict(status="error", reason="parser failed", raw=out.text),
                f"parser failed: {_describe(e)}",
            )
    elif out.text is not None:
        v = Verdict.invalid("text output but the judge has no parser", raw=str(out.text))
    else:
        v = Verdict.invalid("backend returned neither text nor a verdict")
    if not v.raw and isinstance(out.text, str) and out.text:
        v = replace(v, raw=out.text)
    return v, None


def to_prediction(
    item: JudgeInput,
    out: RawOutput,
    parse: Parse | None,
    *,
    latency_s: float | None,
    batch_size: int = 1,
    warmup: bool = False,
    attempts: int = 1,
) -> Prediction:
    """One decision line from a backend output. Every verdict passes the one validator
    (``bench.core.verdict.checked``) here, whichever backend made it: a wrong act, a NaN or
    out-of-range risk, text UTF-8 cannot store, or a parser that raises becomes invalid,
    partial or error with the reason, never a silent SAFE or UNSAFE and never a crash."""
    v, error = _verdict_of(item, out, parse)
    raw_out = out if isinstance(out, RawOutput) else RawOutput()
    return Prediction(
        id=item.dp.id,
        verdict=checked(v, load_taxonomy()),
        latency_s=latency_s,
        batch_size=batch_size,
        warmup=warmup,
        tokens_in=_count(raw_out.tokens_in),
        tokens_out=_count(raw_out.tokens_out),
        error=clean_text(error)[0] if error else None,
        attempts=attempts,
    )


def error_prediction(
    item_id: str,
    message: str,
    *,
    attempts: int = 1,
    latency_s: float | None = None,
    batch_size: int = 1,
    warmup: bool = False,
) -> Prediction:
    """A decision the backend could not answer (after its retries)."""
    return Prediction(
        id=item_id,
        verdict=Verdict(status="error", reason="backend error"),
        error=clean_text(message[:2000])[0],
        attempts=attempts,
        latency_s=latency_s,
        batch_size=batch_size,
        warmup=warmup,
    )


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


# ------------------------------------------------------------------------------------------ async


async def arun_async(
    backend: Any,
    items: Iterable[JudgeInput],
    sink: Sink,
    *,
    concurrency: int,
    parse: Parse | None = None,
    retry: RetryPolicy = RetryPolicy(),
    seed: int = 0,
    warmup: bool = True,
    stop_on_warmup_error: bool = True,
) -> RunStats:
    """Drive an async backend: the first item alone (marked warm-up), then ``concurrency``
    workers sharing one iterator. Returns the counts."""
    stats = RunStats()
    rng = random.Random(seed)
    call = backend.adecide
    perf = time.perf_counter
    sleep = asyncio.sleep

    async def one(item: JudgeInput, warm: bool) -> Prediction:
        tries = Attempts(retry, rng)
        while True:
            tries.start()
            t0 = perf()
            try:
                out = await call(item)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded, the run goes on
                wait = tries.wait_after(e)
                if wait is not None:
                    await sleep(wait)
                    continue
                return error_prediction(
                    item.dp.id,
                    tries.failure(e),
                    attempts=tries.n,
                    latency_s=perf() - t0,
                    warmup=warm,
                )
            return to_prediction(
                item, out, parse, latency_s=perf() - t0, warmup=warm, attempts=tries.n
            )

    def emit(p: Prediction) -> None:
        stats.add(p)
        sink(p)

    it: Iterator[JudgeInput] = iter(items)
    if warmup:
        first = next(it, None)
        if first is None:
            return stats
        p = await one(first, True)
        emit(p)
        if p.status == "error" and stop_on_warmup_error:
            stats.aborted = f"the first decision failed ({p.error}); not sending the rest"
            return stats

    async def worker() -> None:
        for item in it:  # one shared iterator: each item is taken by exactly one worker
            emit(await one(item, False))

    workers = max(1, min(concurrency, MAX_CONCURRENCY))
    await asyncio.gather(*(worker() for _ in range(workers)))
    return stats


def run_async(backend: Any, items: Iterable[JudgeInput], sink: Sink, **kw: Any) -> RunStats:
    """``arun_async`` on a fresh event loop (the caller must not be inside one). A backend's
    ``aclose()``, when it has one, is awaited on that loop before it closes, so pooled
    connections are shut cleanly instead of being left to the garbage collector."""

    async def main() -> RunStats:
        try:
            return await arun_async(backend, items, sink, **kw)
        finally:
            if isinstance(backend, AsyncClosable):
                await backend.aclose()

    return asyncio.run(main())


# ---------------------------------------------------------------------------------------- batched


def _call_batch(
    backend: Any,
    batch: list[JudgeInput],
    retry: RetryPolicy,
    rng: random.Random,
    sleep: Callable[[float], None],
) -> tuple[list[RawOutput] | None, float, Attempts, BaseException | None]:
    """(outputs, seconds of the successful call, attempts, the final error)."""
    tries = Attempts(retry, rng)
    while True:
        tries.start()
        t0 = time.perf_counter()
        try:
            outs = backend.decide_batch(batch)
            dt = time.perf_counter() - t0
        except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded, see run_batched
            wait = tries.wait_after(e)
            if wait is not None:
                sleep(wait)
                continue
            return None, time.perf_counter() - t0, tries, e
        if not isinstance(outs, list) or len(outs) != len(batch):
            n = len(outs) if isinstance(outs, list) else type(outs).__name__
            return (
                None,
                dt,
                tries,
                ValueError(f"backend returned {n} outputs for {len(batch)} inputs"),
            )
        return outs, dt, tries, None


def run_batched(
    backend: Any,
    items: Iterable[JudgeInput],
    sink: Sink,
    *,
    batch_size: int,
    parse: Parse | None = None,
    retry: RetryPolicy = RetryPolicy(),
    seed: int = 0,
    warmup: bool = True,
    stop_on_warmup_error: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> RunStats:
    """Drive a batched backend: the first item alone (warm-up), then slices of ``batch_size``."""
    stats = RunStats()
    rng = random.Random(seed)
    it = iter(items)

    def emit(p: Prediction) -> None:
        stats.add(p)
        sink(p)

    def do(batch: list[JudgeInput], warm: bool) -> None:
        outs, dt, tries, exc = _call_batch(backend, batch, retry, rng, sleep)
        n = len(batch)
        if outs is not None:
            for item, out in zip(batch, outs, strict=True):
                emit(
                    to_prediction(
                        item,
                        out,
                        parse,
                        latency_s=dt / n,
                        batch_size=n,
                        warmup=warm,
                        attempts=tries.n,
                    )
                )
            return
        assert exc is not None
        if n > 1 and not isinstance(exc, RetryableError):
            # isolate the item that breaks the batch instead of failing all of them
            for item in batch:
                do([item], warm)
            return
        for item in batch:
            emit(
                error_prediction(
                    item.dp.id,
                    tries.failure(exc),
                    attempts=tries.n,
                    latency_s=dt / n,
                    batch_size=n,
                    warmup=warm,
                )
            )

    if warmup:
        first = next(it, None)
        if first is None:
            return stats
        do([first], True)
        if stats.by_status.get("error") and stop_on_warmup_error:
            stats.aborted = "the first decision failed; not sending the rest"
            return stats
    size = max(1, min(batch_size, MAX_BATCH_SIZE))
    while batch := list(islice(it, size)):
        do(batch, False)
    return stats


def run(
    backend: Any,
    items: Iterable[JudgeInput],
    sink: Sink,
    *,
    concurrency: int = 1,
    batch_size: int = 1,
    parse: Parse | None = None,
    retry: RetryPolicy = RetryPolicy(),
    warmup: bool = True,
    stop_on_warmup_error: bool = True,
) -> RunStats:
    """Drive ``backend`` over ``items`` through whichever protocol it implements."""
    kw: dict[str, Any] = dict(
        parse=parse, retry=retry, warmup=warmup, stop_on_warmup_error=stop_on_warmup_error
    )
    if isinstance(backend, AsyncBackend):
        return run_async(backend, items, sink, concurrency=concurrency, **kw)
    if isinstance(backend, BatchBackend):
        return run_batched(backend, items, sink, batch_size=batch_size, **kw)
    raise TypeError(
        f"{type(backend).__name__} implements neither decide_batch nor adecide "
        "(see bench.judging.protocol)"
    )
