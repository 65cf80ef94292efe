"""One registry of judge backends, filled in one place.

Each backend module registers a factory with ``@backend(name, params={...})``. ``params`` maps
every allowed key of the judge row's ``[judge.params]`` table to its type (or a tuple of types),
so ``decide.py --check`` validates rows without importing any SDK: backend modules import their
SDK inside the factory, never at module level. A duplicate name raises; an unknown name raises
with the close matches.

A factory is called as ``factory(judge)`` with the validated judge row (``bench.judges.JudgeSpec``:
``id``, ``model``, ``revision``, ``subfolder``, ``params``, ``concurrency``, ``batch_size``, ...)
and returns an object implementing ``BatchBackend`` or ``AsyncBackend`` (``bench.backends.base``),
or raises ``SkipJudge`` with what to install or set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.registry import Registry

Factory = Callable[[Any], Any]


@dataclass(frozen=True)
class BackendInfo:
    """A registered backend."""

    name: str
    """Registry name, the ``backend`` value in judges.toml."""
    factory: Factory
    """Builds the backend from a validated judge row."""
    params: Mapping[str, type | tuple[type, ...]]
    """Allowed ``params`` keys and their types."""
    generative: bool
    """True when it returns text for a parser (needs ``prompt`` and ``parser``); False for scorers
    that return verdicts directly."""


_REGISTRY: Registry[BackendInfo] = Registry(
    "backend",
    {
        "baseline": "bench.backends.baseline",
        "sklearn": "bench.backends.sklearn_lr",
        "embedding": "bench.backends.embedding",
        "openai": "bench.backends.openai_compat",
        "transformers": "bench.backends.hf_transformers",
        "vllm": "bench.backends.vllm_offline",
        "hf-inference": "bench.backends.hf_inference",
        "python": "bench.backends.python_callable",
    },
)
"""Backend name -> BackendInfo (each module imported lazily)."""


def backend(
    name: str, *, params: Mapping[str, type | tuple[type, ...]], generative: bool = True
) -> Callable[[Factory], Factory]:
    """Decorator registering a backend factory under ``name``."""

    def deco(fn: Factory) -> Factory:
        _REGISTRY.add(name, BackendInfo(name, fn, dict(params), generative))
        return fn

    return deco


def names() -> list[str]:
    """Every known backend name."""
    return _REGISTRY.names()


def get(name: str) -> BackendInfo:
    """The backend called ``name``; an unknown name raises with close matches."""
    return _REGISTRY.get(name)
