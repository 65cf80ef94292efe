"""One lazily filled registry shape, shared by every pluggable kind (sources, proposers, backends).

Entries are registered by decorators in their own modules, and those modules live in one plug-in
package per kind (``bench.sources.adapters``, ``bench.labelling.proposers``,
``bench.judging.backends``), so adding an entry is adding one module: no list of names to edit
anywhere else. ``Registry.get(name)`` imports only the module named like the entry (``-`` read as
``_``) when it registers that name, and otherwise every plug-in module once; ``names()`` imports
every plug-in module once. Modules whose name starts with ``_`` are shared helpers, never
plug-ins. A duplicate name raises; an unknown name raises a ConfigError that lists the close
matches. Nothing ever falls back to a default silently.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Generic, TypeVar

from bench.core.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> entry, filled by the modules of one plug-in package."""

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        """What the entries are, for messages ('source', 'backend', 'proposer')."""
        self.package = package
        """The plug-in package whose modules register entries."""
        self._entries: dict[str, T] = {}
        self._modules: dict[str, str] = {}
        self._scanned = False

    def add(self, name: str, entry: T, module: str = "") -> None:
        """Register ``entry`` under ``name``; a second registration of a name raises."""
        if name in self._entries:
            raise ConfigError(
                f"{self.kind} {name!r} registered twice ({self._modules.get(name)} and {module}); "
                "rename one of them"
            )
        self._entries[name] = entry
        self._modules[name] = module

    def plugin_modules(self) -> list[str]:
        """The plug-in modules of the package (helpers starting with ``_`` left out), sorted."""
        pkg = importlib.import_module(self.package)
        return sorted(
            f"{self.package}.{m.name}"
            for m in pkgutil.iter_modules(pkg.__path__)
            if not m.name.startswith("_")
        )

    def _scan(self) -> None:
        if not self._scanned:
            for module in self.plugin_modules():
                importlib.import_module(module)
            self._scanned = True

    def names(self) -> list[str]:
        """Every registered name, sorted (imports every plug-in module once)."""
        self._scan()
        return sorted(self._entries)

    def entries(self) -> dict[str, T]:
        """Name -> entry for every registered name."""
        self._scan()
        return dict(sorted(self._entries.items()))

    def get(self, name: str) -> T:
        """The entry called ``name``; unknown names raise with the close matches."""
        if name not in self._entries:
            own = f"{self.package}.{name.replace('-', '_')}"
            if own in self.plugin_modules():
                importlib.import_module(own)
        if name not in self._entries:
            self._scan()
        if name not in self._entries:
            known = self.names()
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(f"unknown {self.kind} {name!r}{hint} (known: {', '.join(known)})")
        return self._entries[name]
