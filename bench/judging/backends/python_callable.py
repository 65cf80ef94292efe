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
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping
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
}
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


class SyncCallable:
    """A plain function (BatchBackend)."""

    def __init__(self, fn: Callable[..., Any], kwargs: dict[str, Any], batched: bool) -> None:
        self.fn, self.kwargs, self.batched = fn, kwargs, batched

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """The function over the items, in order."""
        if self.batched:
            return [wrap(v) for v in self.fn(items, **self.kwargs)]
        return [wrap(self.fn(i, **self.kwargs)) for i in items]


class AsyncCallable:
    """An ``async def`` function (AsyncBackend)."""

    def __init__(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self.fn, self.kwargs = fn, kwargs

    async def adecide(self, item: JudgeInput) -> RawOutput:
        """Await the function for one item."""
        return wrap(await self.fn(item, **self.kwargs))


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


@backend("python", params=PARAMS, check=check)
def make(judge: JudgeSpec) -> SyncCallable | AsyncCallable:
    """Import the row's callable."""
    p = judge.params
    if "callable" not in p:
        raise ConfigError(f"judge {judge.id!r}: set params.callable = 'module:function'")
    fn = resolve(p["callable"], p.get("path"), judge.id)
    kwargs = dict(p.get("kwargs", {}))
    if inspect.iscoroutinefunction(fn):
        if p.get("batched"):
            raise ConfigError(f"judge {judge.id!r}: an async function cannot be batched")
        return AsyncCallable(fn, kwargs)
    return SyncCallable(fn, kwargs, bool(p.get("batched", False)))
