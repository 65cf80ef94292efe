"""One registry of source adapters, filled in one place.

``@register`` adds an adapter class under its ``name``; a duplicate name raises, and looking up
an unknown name raises an error listing the close matches. Adapter modules are imported lazily
by ``get`` so that ``import bench.sources`` stays cheap.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable

from bench.errors import ConfigError
from bench.sources.base import Source

_MODULES = {
    "rjudge": "bench.sources.rjudge",
    "stepshield": "bench.sources.stepshield",
    "assebench": "bench.sources.assebench",
    "sample": "bench.sources.sample",
}
"""Adapter name -> module that registers it."""

_REGISTRY: dict[str, type[Source]] = {}


def register(name: str) -> Callable[[type[Source]], type[Source]]:
    """Class decorator: add a Source adapter under ``name``; a duplicate raises."""

    def deco(cls: type[Source]) -> type[Source]:
        if name in _REGISTRY:
            raise ConfigError(f"source adapter {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def names() -> list[str]:
    """Every known adapter name."""
    return sorted(_MODULES)


def get(name: str) -> Source:
    """An instance of the adapter called ``name``; unknown names raise with close matches."""
    if name not in _MODULES:
        close = difflib.get_close_matches(name, _MODULES, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"unknown source {name!r}{hint} (known: {', '.join(names())})")
    if name not in _REGISTRY:
        importlib.import_module(_MODULES[name])
    return _REGISTRY[name]()
