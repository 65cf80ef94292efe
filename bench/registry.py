"""One lazily filled registry shape, shared by every pluggable kind (sources, backends).

Entries are registered by decorators in their own modules; ``Registry.get`` imports the module
that registers a name only when that name is first asked for, so importing the registry stays
cheap and no SDK is loaded before it is used. A duplicate name raises; an unknown name raises a
ConfigError that lists the close matches. Nothing ever falls back to a default silently.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Generic, TypeVar

from bench.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> entry, with each name's module imported on first use."""

    def __init__(self, kind: str, modules: Mapping[str, str]) -> None:
        self.kind = kind
        """What the entries are, for messages ('source', 'backend')."""
        self.modules = dict(modules)
        """Name -> module that registers it."""
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> None:
        """Register ``entry`` under ``name``; a second registration of a name raises."""
        if name in self._entries:
            raise ConfigError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = entry

    def names(self) -> list[str]:
        """Every known name, sorted."""
        return sorted(self.modules)

    def get(self, name: str) -> T:
        """The entry called ``name``, importing its module if needed; unknown names raise with
        the close matches."""
        if name not in self.modules:
            close = difflib.get_close_matches(name, self.modules, n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(self.names())})"
            )
        if name not in self._entries:
            importlib.import_module(self.modules[name])
        if name not in self._entries:
            raise ConfigError(
                f"module {self.modules[name]} did not register {self.kind} {name!r}: a bug, "
                "please report it"
            )
        return self._entries[name]
