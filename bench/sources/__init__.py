"""Raw sources -> canonical trajectories: the adapter registry, extraction and pinned downloads.

Adapters live one per module in ``bench.sources.adapters`` and register with ``@register(name)``;
``names()`` and ``upstream_names()`` are derived from what registered, so no list of sources is
written anywhere else. ``base`` defines what an adapter provides (``Source``) and the records
extraction produces besides trajectories (rejects, exclusions); ``extraction`` runs an adapter and
writes its files; ``download`` fetches pinned upstream files and verifies their sha256.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.core.registry import Registry
from bench.sources.base import Source

_REGISTRY: Registry[type[Source]] = Registry("source", "bench.sources.adapters")
"""Adapter name -> Source class (each module imported when first needed)."""


def register(name: str) -> Callable[[type[Source]], type[Source]]:
    """Class decorator: add a Source adapter under ``name``; a duplicate raises."""

    def deco(cls: type[Source]) -> type[Source]:
        cls.name = name
        _REGISTRY.add(name, cls, cls.__module__)
        return cls

    return deco


def names() -> list[str]:
    """Every known adapter name, sorted."""
    return _REGISTRY.names()


def upstream_names() -> list[str]:
    """The adapters of upstream sources (those with a pinned upstream; not the project's own
    sample corpus), sorted."""
    return [n for n, cls in _REGISTRY.entries().items() if cls.upstream is not None]


def entries() -> dict[str, type[Source]]:
    """Name -> adapter class for every known adapter, sorted by name."""
    return _REGISTRY.entries()


def embedded_names() -> list[str]:
    """The project's own corpora, shipped in the repository (no upstream), sorted."""
    return [n for n, cls in _REGISTRY.entries().items() if cls.upstream is None]


def get(name: str) -> Source:
    """An instance of the adapter called ``name``; unknown names raise with close matches."""
    return _REGISTRY.get(name)()
