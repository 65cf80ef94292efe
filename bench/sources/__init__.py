"""One registry of source adapters, filled in one place.

``@register`` adds an adapter class under its ``name``; a duplicate name raises, and looking up
an unknown name raises an error listing the close matches. Adapter modules are imported lazily
by ``get`` so that ``import bench.sources`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.registry import Registry
from bench.sources.base import Source

_REGISTRY: Registry[type[Source]] = Registry(
    "source",
    {
        "rjudge": "bench.sources.rjudge",
        "stepshield": "bench.sources.stepshield",
        "assebench": "bench.sources.assebench",
        "sample": "bench.sources.sample",
    },
)
"""Adapter name -> Source class (each module imported lazily)."""


def register(name: str) -> Callable[[type[Source]], type[Source]]:
    """Class decorator: add a Source adapter under ``name``; a duplicate raises."""

    def deco(cls: type[Source]) -> type[Source]:
        cls.name = name
        _REGISTRY.add(name, cls)
        return cls

    return deco


def names() -> list[str]:
    """Every known adapter name."""
    return _REGISTRY.names()


def get(name: str) -> Source:
    """An instance of the adapter called ``name``; unknown names raise with close matches."""
    return _REGISTRY.get(name)()
