"""The label vocabulary (data/taxonomy.toml): the one loader every stage uses.

The file holds four closed sets, each name with a one-line definition: ``[act]`` (exactly
CONTINUE, ASK, STOP, in that order), ``[fail]`` (failure modes), ``[harm]`` (harm types) and
``[src]`` (risk sources); and ``[map.<source>.<table>]`` tables that the label proposers use to
map a source's own vocabulary onto these names. ``NONE`` is an absence marker, never listed as a
name. Prompts list the names in file order; parsers, proposers, reviews and the build check
values against the same sets.
"""

from __future__ import annotations

import difflib
import functools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bench.core.errors import ConfigError
from bench.core.labels import ACTS, NONE, TAXONOMY_FIELDS
from bench.core.paths import TAXONOMY

SECTIONS: tuple[str, ...] = ("act", *TAXONOMY_FIELDS)
"""The name sections of the file."""


@dataclass(frozen=True)
class Taxonomy:
    """The closed label sets and the source mapping tables."""

    act: Mapping[str, str]
    """Act -> one-line definition (CONTINUE, ASK, STOP)."""
    fail: Mapping[str, str]
    """Failure-mode name -> definition."""
    harm: Mapping[str, str]
    """Harm-type name -> definition."""
    src: Mapping[str, str]
    """Risk-source name -> definition."""
    maps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """``[map.<source>.<table>]``: source -> table -> {source value: project value or list}."""

    def definitions(self, section: str) -> Mapping[str, str]:
        """Name -> definition for one section (act, fail, harm or src), in file order."""
        if section not in SECTIONS:
            raise ConfigError(
                f"unknown taxonomy section {section!r}: use one of {', '.join(SECTIONS)}"
            )
        value: Mapping[str, str] = getattr(self, section)
        return value

    def names(self, section: str) -> tuple[str, ...]:
        """The names of one section, in file order."""
        return tuple(self.definitions(section))

    def check(self, kind: str, value: str) -> str | None:
        """A problem with ``value`` as a ``kind`` name (NONE is allowed), else None."""
        names = self.definitions(kind)
        if value == NONE or value in names:
            return None
        close = difflib.get_close_matches(value, list(names), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return (
            f"{kind}={value!r} is not in data/taxonomy.toml [{kind}]{hint} "
            f"(known: {', '.join(sorted(names))}, or NONE)"
        )

    def table(self, source: str, name: str) -> Mapping[str, Any]:
        """The mapping table ``[map.<source>.<name>]``; ConfigError when it is missing."""
        try:
            table: Mapping[str, Any] = self.maps[source][name]
        except KeyError:
            raise ConfigError(
                f"data/taxonomy.toml has no table [map.{source}.{name}]: restore it from git"
            ) from None
        return table


def load_taxonomy(path: str | os.PathLike[str] | None = None) -> Taxonomy:
    """Read and check the taxonomy (default ``data/taxonomy.toml``); ConfigError says what to fix.
    Cached per file version (path, size, modification time)."""
    p = Path(path) if path is not None else TAXONOMY
    try:
        st = p.stat()
    except OSError as e:
        raise ConfigError(f"taxonomy file {p} not found ({e}): restore data/taxonomy.toml") from e
    return _load(str(p), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _load(path: str, _size: int, _mtime: int) -> Taxonomy:
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e}; restore data/taxonomy.toml from git") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e}); fix the file") from e
    defs: dict[str, Mapping[str, str]] = {}
    for section in SECTIONS:
        table = data.get(section)
        if not isinstance(table, dict) or not table:
            raise ConfigError(f"{path}: section [{section}] is missing or empty; add it")
        bad = [k for k, v in table.items() if not isinstance(v, str)]
        if bad:
            raise ConfigError(f"{path}: [{section}] {bad[0]} must be a one-line definition string")
        if NONE in table or NONE.lower() in table:
            raise ConfigError(f"{path}: [{section}] lists NONE; it is an absence marker, remove it")
        defs[section] = MappingProxyType(dict(table))
    if tuple(defs["act"]) != ACTS:
        raise ConfigError(
            f"{path}: [act] must list exactly {', '.join(ACTS)} in that order, found "
            f"{', '.join(defs['act'])}"
        )
    maps = data.get("map", {})
    if not isinstance(maps, dict):
        raise ConfigError(f"{path}: [map] must be a table of [map.<source>.<table>] tables")
    return Taxonomy(
        act=defs["act"],
        fail=defs["fail"],
        harm=defs["harm"],
        src=defs["src"],
        maps=MappingProxyType(dict(maps)),
    )
