"""A research judge written as a Python function: ``params.callable = "module:function"``.

THIS RUNS THAT CODE with your permissions, like any import: add such a row only for code you
trust. ``params.path`` (optional) is a folder put first on ``sys.path`` to find the module;
``params.kwargs`` (a table) is passed to every call.

The function is called as ``fn(item, **kwargs)`` with a ``bench.judging.protocol.JudgeInput``
(``item.dp`` is the decision point without gold, ``item.messages`` the rendered prompt) and
returns the judge's text (parsed by the row's ``parser``), a ``bench.core.verdict.Verdict``, or a
``RawOutput``. With ``batched = true`` it is called as ``fn(items, **kwargs)`` and returns one
of those per item, in order. An ``async def`` function is awaited concurrently up to the row's
``concurrency``. Raise ``RetryableError`` for a transient failure.

``params.timeout_s`` (default 60) bounds each decision: a call that has not returned by then is
recorded as that decision's error and the run goes on (a batched call gets ``timeout_s`` times
its batch size). A synchronous function runs in a daemon thread that is abandoned when it times
out (Python cannot stop it); an async one is cancelled. An exception the function raises,
``SystemExit`` included, is recorded for its decision and never ends the run.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from bench.core.errors import ConfigError
from bench.core.verdict import Verdict
from bench.judging.backends import backend
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput

PARAMS: dict[str, type | tuple[type, ...]] = {
    "callable": str,
    "path": str,
    "kwargs": dict,
    "batched": bool,
    "prompt_budget": int,
    "timeout_s": float,
}

DEFAULT_TIMEOUT_S = 60.0
"""Seconds one decision may take before it is recorded as an error."""
"""Declared params."""


def wrap(value: Any) -> RawOutput:
    """A function's return value as a RawOutput."""
    if isinstance(value, RawOutput):
        return value
    if isinstance(value, Verdict):
        return RawOutput(verdict=value)
    if isinstance(value, str):
        return RawOutput(text=value)
    raise TypeError(
        f"the judge function returned {type(value).__name__}; return str, Verdict or RawOutput"
    )


def resolve(spec: str, path: str | None, judge_id: str) -> Callable[..., Any]:
    """Import ``module:function``."""
    mod_name, _, fn_name = spec.partition(":")
    if not mod_name or not fn_name:
        raise ConfigError(
            f"judge {judge_id!r}: params.callable must be 'module:function', not {spec!r}"
        )
    if path and path not in sys.path:
        sys.path.insert(0, path)
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise ConfigError(
            f"judge {judge_id!r}: cannot import {mod_name!r} ({e}); set params.path to its folder"
        ) from e
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ConfigError(f"judge {judge_id!r}: {mod_name!r} has no function {fn_name!r}")
    return fn


def call_with_timeout(fn: Callable[[], Any], timeout_s: float) -> Any:
    """``fn()`` in a daemon thread; TimeoutError when it has not returned within ``timeout_s``
    (the thread is left behind: Python cannot stop it). Whatever ``fn`` raises, SystemExit
    included, is raised here."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="python-judge", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise TimeoutError(f"the judge function did not return within {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class SyncCallable:
    """A plain function (BatchBackend)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        kwargs: dict[str, Any],
        batched: bool,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.fn, self.kwargs, self.batched, self.timeout_s = fn, kwargs, batched, timeout_s

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """The function over the items, in order (each call bounded by the timeout)."""
        if self.batched:
            got = call_with_timeout(
                lambda: self.fn(items, **self.kwargs), self.timeout_s * len(items)
            )
            return [wrap(v) for v in got]
        return [
            wrap(call_with_timeout(partial(self.fn, i, **self.kwargs), self.timeout_s))
            for i in items
        ]


class AsyncCallable:
    """An ``async def`` function (AsyncBackend)."""

    def __init__(
        self, fn: Callable[..., Any], kwargs: dict[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.fn, self.kwargs, self.timeout_s = fn, kwargs, timeout_s

    async def adecide(self, item: JudgeInput) -> RawOutput:
        """Await the function for one item, cancelled after the timeout."""
        try:
            value = await asyncio.wait_for(self.fn(item, **self.kwargs), self.timeout_s)
        except TimeoutError:
            raise TimeoutError(
                f"the judge function did not return within {self.timeout_s:g} s"
            ) from None
        return wrap(value)


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check`` (the code itself is imported only at run time)."""
    spec = params.get("callable")
    if spec is None:
        raise ConfigError(f"judge {judge_id!r}: set params.callable = 'module:function'")
    mod_name, _, fn_name = str(spec).partition(":")
    if not mod_name or not fn_name:
        raise ConfigError(
            f"judge {judge_id!r}: params.callable must be 'module:function', not {spec!r}"
        )
    if float(params.get("timeout_s", DEFAULT_TIMEOUT_S)) <= 0:
        raise ConfigError(f"judge {judge_id!r}: params.timeout_s must be positive")


@backend("python", params=PARAMS, check=check)
def make(judge: JudgeSpec) -> SyncCallable | AsyncCallable:
    """Import the row's callable."""
    p = judge.params
    if "callable" not in p:
        raise ConfigError(f"judge {judge.id!r}: set params.callable = 'module:function'")
    fn = resolve(p["callable"], p.get("path"), judge.id)
    kwargs = dict(p.get("kwargs", {}))
    timeout_s = float(p.get("timeout_s", DEFAULT_TIMEOUT_S))
    if inspect.iscoroutinefunction(fn):
        if p.get("batched"):
            raise ConfigError(f"judge {judge.id!r}: an async function cannot be batched")
        return AsyncCallable(fn, kwargs, timeout_s)
    return SyncCallable(fn, kwargs, bool(p.get("batched", False)), timeout_s)
