"""One registry of judge backends: one module per backend, one decorator each.

Each backend module in this package registers a factory with ``@backend(name, params=...)``;
``params`` maps every allowed key of the judge row's ``[judge.params]`` table to its type (or a
tuple of types), or is the backend's frozen params dataclass, whose fields are then the keys and
whose annotations the types (``bench.judging.protocol.toml_types``: declared once), so ``decide.py --check`` validates rows without importing any SDK: backend
modules import their SDK inside the factory, never at module level. ``check``, when given, runs
the backend's own value checks on a row's params (URL schemes, ranges, rule names, regexes) at
``--check`` time instead of at run time. A duplicate name raises; an unknown name raises with
the close matches. Modules starting with ``_`` are helpers shared by backends.

A factory (``bench.judging.protocol.BackendFactory``) is called as ``factory(judge)`` with the
validated row (``bench.judging.protocol.JudgeSpec``) and returns an object implementing
``BatchBackend`` or ``AsyncBackend``, or raises ``SkipJudge`` with what to install or set.

Adding a backend: one module here with one ``@backend`` decorator (docs/judges.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.core.registry import Registry
from bench.judging.protocol import BackendFactory, toml_types

ParamCheck = Callable[[str, Mapping[str, Any]], None]
"""``check(judge_id, params)``: raise ConfigError naming the judge and key for a bad value."""


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend."""

    name: str
    """Registry name, the ``backend`` value in judges.toml."""
    factory: BackendFactory
    """Builds the backend from a validated judge row."""
    params: Mapping[str, type | tuple[type, ...]]
    """Allowed ``params`` keys and their types."""
    generative: bool
    """True when it returns text for a parser (needs ``prompt`` and ``parser``); False for scorers
    that return verdicts directly."""
    check: ParamCheck | None = None
    """The backend's own value checks, run by ``--check`` (None: types only)."""
    fits_on_dev: bool = False
    """True when the backend is fitted on this benchmark's dev split (a learned baseline): its
    rows are marked fitted, never zero-shot."""
    scorings: tuple[str, ...] = ("generate",)
    """The ``scoring`` modes a row of this backend may ask for (bench.prompts.scoring)."""
    loads_weights: bool = False
    """True when it loads model weights itself, so a Hub model should be pinned with
    ``revision`` (``bench.judging.specs.unpinned``)."""
    job_extra: str = ""
    """The pip extra of this project a Hugging Face job installs to run it (``.[hf]``)."""


_REGISTRY: Registry[BackendInfo] = Registry("backend", "bench.judging.backends")
"""Backend name -> BackendInfo (each module imported when first needed)."""


def backend(
    name: str,
    *,
    params: Mapping[str, type | tuple[type, ...]] | type,
    generative: bool = True,
    check: ParamCheck | None = None,
    fits_on_dev: bool = False,
    scorings: tuple[str, ...] = ("generate",),
    loads_weights: bool = False,
    job_extra: str = "",
) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator registering a backend factory under ``name`` (the arguments are the
    ``BackendInfo`` fields)."""

    def deco(fn: BackendFactory) -> BackendFactory:
        module = getattr(fn, "__module__", "")
        keys = toml_types(params) if isinstance(params, type) else dict(params)
        info = BackendInfo(
            name, fn, keys, generative, check, fits_on_dev, scorings, loads_weights, job_extra
        )
        _REGISTRY.add(name, info, module)
        return fn

    return deco


def names() -> list[str]:
    """Every known backend name."""
    return _REGISTRY.names()


def get(name: str) -> BackendInfo:
    """The backend called ``name``; an unknown name raises with close matches."""
    return _REGISTRY.get(name)


def find(name: str) -> BackendInfo | None:
    """The backend called ``name``, or None when none is registered (a predictions file may
    name a backend this checkout no longer has)."""
    return _REGISTRY.entries().get(name)
