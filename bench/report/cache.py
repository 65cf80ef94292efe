"""Each judge's breakdown cells, cached by exactly what they are computed from.

A judge's figures in ``by_source``, ``by_category``, ``by_subset`` and ``by_level`` (every
``BREAKDOWN_METRICS`` figure of every group, with its interval) are a pure function of

- the judge's per-trajectory statistics (``JudgeStats``: its count table and risk values, which
  already fold in its predictions file, the ground truth it is aligned to and the invalid
  policy),
- the board: the trajectories of every group, the shared bootstrap draws (seed, resamples and
  strata), the reward matrix, the confidence and the metrics carried,
- the code that turns them into cells (every ``bench/metrics/*.py`` module and the report
  modules below).

``board_key`` hashes the board and the code once per run; ``judge_key`` adds the judge's
statistics, so any change of input, setting or code lands on another entry (old entries are
simply never read again; the folder is safe to delete). An entry is one JSON file,
``<judge key>.json``, under ``bench.core.paths.report_cache()``: JSON floats round-trip
exactly (``repr``), so a figure read back is the figure computed. An entry that cannot be read,
or does not hold every group and metric of this board, is ignored and rewritten.

Only cells are kept per judge: a warm run bootstraps none of a cached judge's groups, and the
resample tables of a judge that must be computed are dropped once its cells are taken.

The per-source and pooled bootstraps (``bench.report.scoring.boots``), whose samples the
cross-judge steps need (macro headline, tie groups, shortcut references and margins), are kept
the same way as ``<key>.npz``: per group one float64 (metrics, resamples) member and its metric
names (``write_samples``), exactly the arrays computed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from bench.metrics.inputs import CostMatrix
from bench.metrics.stats import JudgeStats

log = logging.getLogger(__name__)

CACHE_FORMAT = 2
"""Version of the entry layout; raise it when an entry's meaning changes in a way the code
fingerprint would not catch."""

Cells = dict[str, dict[str, dict[str, Any]]]
"""Section (``by_category``...) -> group name -> metric -> ``{"value", "ci"}``."""

Groups = Mapping[str, Mapping[str, np.ndarray]]
"""Section -> group name -> the group's trajectory mask."""


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of the cache format and the source of every module the cells depend on: each
    ``bench/metrics/*.py`` and the report's scoring, breakdowns and this module."""
    here = Path(__file__).resolve().parent
    files = sorted((here.parent / "metrics").glob("*.py")) + [
        here / "scoring.py",
        here / "breakdowns.py",
    ]
    h = hashlib.sha256(f"format {CACHE_FORMAT}\n".encode())
    for p in [*files, Path(__file__)]:
        h.update(f"{p.parent.name}/{p.name}\n".encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _update_array(h: Any, a: np.ndarray) -> None:
    """Feed an array's dtype, shape and bytes to the hash ``h``."""
    a = np.ascontiguousarray(a)
    h.update(f"{a.dtype.str}{a.shape}\n".encode())
    h.update(a.tobytes())


def board_key(
    groups: Groups,
    weights: np.ndarray,
    cost: CostMatrix,
    confidence: float,
    metrics: Sequence[str],
) -> str:
    """sha256 of everything a judge's cells depend on besides its own statistics: the groups
    (names and trajectory masks), the bootstrap draws, the reward matrix, the confidence, the
    metrics and the code (``code_fingerprint``)."""
    h = hashlib.sha256(code_fingerprint().encode())
    h.update(json.dumps([list(metrics), confidence]).encode())
    _update_array(h, np.asarray(cost.values, dtype=np.float64))
    _update_array(h, weights)
    for section, named in groups.items():
        for name, mask in named.items():
            h.update(json.dumps([section, name]).encode())
            _update_array(h, np.packbits(np.asarray(mask, dtype=bool)))
    return h.hexdigest()


def judge_key(board: str, stats: JudgeStats) -> str:
    """The entry name of one judge on a board: ``board`` (``board_key``) and its statistics."""
    h = hashlib.sha256(board.encode())
    _update_array(h, stats.table)
    _update_array(h, stats.values)
    return h.hexdigest()


def _complete(got: Any, groups: Groups, metrics: Sequence[str]) -> bool:
    """Whether an entry holds a cell for every group and metric of this board."""
    if not isinstance(got, dict) or set(got) != set(groups):
        return False
    for section, named in groups.items():
        have = got[section]
        if not isinstance(have, dict) or set(have) != set(named):
            return False
        for cells in have.values():
            if not isinstance(cells, dict) or list(cells) != list(metrics):
                return False
            if not all(isinstance(c, dict) and set(c) == {"value", "ci"} for c in cells.values()):
                return False
    return True


def read(folder: Path, key: str, groups: Groups, metrics: Sequence[str]) -> Cells | None:
    """The cells stored under ``key``, or None when there is no entry or it cannot be used
    (unreadable, another key, a group or metric missing): the caller recomputes it."""
    path = folder / f"{key}.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        log.warning("ignoring the unreadable report cache entry %s (%s)", path, e)
        return None
    if not isinstance(doc, dict) or doc.get("key") != key:
        log.warning("ignoring the report cache entry %s: it holds another key", path)
        return None
    cells = doc.get("cells")
    if not _complete(cells, groups, metrics):
        log.warning("ignoring the report cache entry %s: groups or metrics missing", path)
        return None
    return cells


def write(folder: Path, key: str, cells: Cells) -> None:
    """Store a judge's cells atomically (a temporary file moved into place); a cache that
    cannot be written is logged and skipped: it only costs the next run the bootstrap."""
    path = folder / f"{key}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"format": CACHE_FORMAT, "key": key, "cells": cells}, fh)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("could not write the report cache %s (%s); it is only a cache", path, e)


V = TypeVar("V")
"""A cached per-judge value (cells, or bootstrap samples)."""


def _read_or_compute(
    judges: Sequence[str],
    read_one: Callable[[str], V | None] | None,
    compute: Callable[[Sequence[str]], Mapping[str, V]],
    write_one: Callable[[str, V], None] | None,
    chunk: int,
) -> dict[str, V]:
    """Each judge's value: read by ``read_one`` where it has one, else computed by ``compute``
    (``chunk`` judges at a time, so each chunk's resample tables are dropped before the next)
    and stored by ``write_one``. ``read_one``/``write_one`` None: no cache."""
    out: dict[str, V] = {}
    missing: list[str] = []
    for j in judges:
        got = None if read_one is None else read_one(j)
        if got is None:
            missing.append(j)
        else:
            out[j] = got
    for i in range(0, len(missing), chunk):
        part = missing[i : i + chunk]
        made = compute(part)
        for j in part:
            out[j] = made[j]
            if write_one is not None:
                write_one(j, made[j])
    return {j: out[j] for j in judges}


Compute = Callable[[Sequence[str]], Mapping[str, Cells]]
"""Cells of the judges named (the bootstrap of those judges only)."""


def judge_cells(
    judges: Sequence[str],
    keys: Mapping[str, str],
    groups: Groups,
    metrics: Sequence[str],
    compute: Compute,
    folder: Path | None,
    chunk: int = 32,
) -> dict[str, Cells]:
    """Every judge's cells: read from ``folder`` where an entry for its key exists, computed
    by ``compute`` (``chunk`` judges at a time, each chunk's resample tables dropped before the
    next) and stored there otherwise. ``folder`` None: no cache, everything computed."""
    return _read_or_compute(
        judges,
        None if folder is None else lambda j: read(folder, keys[j], groups, metrics),
        compute,
        None if folder is None else lambda j, v: write(folder, keys[j], v),
        chunk,
    )


# ------------------------------------------------------------- bootstrap samples (npz)

Samples = dict[str, dict[str, np.ndarray]]
"""Group name -> metric -> (resamples,) bootstrap values of one judge."""


def read_samples(folder: Path, key: str, groups: Sequence[str]) -> Samples | None:
    """The samples stored under ``key`` (``<key>.npz``), or None when there is no entry or it
    cannot be used (unreadable, a group missing): the caller recomputes it."""
    path = folder / f"{key}.npz"
    if not path.is_file():
        return None
    out: Samples = {g: {} for g in groups}
    try:
        with np.load(path, allow_pickle=False) as z:
            for name in z.files:
                g, _, m = name.partition("/")
                if g not in out or name.endswith(_NAMES):
                    continue
                if m:
                    out[g][m] = z[name]
                else:
                    rows = z[name]
                    names = z[name + _NAMES].tolist()
                    out[g].update((str(k), rows[n]) for n, k in enumerate(names))
    except (OSError, ValueError, KeyError, IndexError, zipfile.BadZipFile) as e:
        log.warning("ignoring the unreadable report cache entry %s (%s)", path, e)
        return None
    if not all(out.values()):
        log.warning("ignoring the report cache entry %s: groups missing", path)
        return None
    return out


_NAMES = ".metrics"
"""Suffix of the member naming the rows of a group's stacked samples."""


def write_samples(folder: Path, key: str, samples: Samples) -> None:
    """Store a judge's samples atomically as ``<key>.npz``: per group one (metrics, resamples)
    member ``<group>`` with its metric names in ``<group>.metrics`` when every metric's samples
    are float64 of one length (a few members read fast), else one member ``<group>/<metric>``
    per metric; a cache that cannot be written is logged and skipped."""
    path = folder / f"{key}.npz"
    arrays: dict[str, Any] = {}
    for g, per in samples.items():
        vals = list(per.values())
        if vals and all(v.dtype == np.float64 and v.shape == vals[0].shape == (len(v),)
                        for v in vals):  # fmt: skip
            arrays[g] = np.stack(vals)
            arrays[g + _NAMES] = np.array(list(per), dtype=str)
        else:
            arrays.update({f"{g}/{m}": v for m, v in per.items()})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("could not write the report cache %s (%s); it is only a cache", path, e)


def judge_samples(
    judges: Sequence[str],
    keys: Mapping[str, str],
    groups: Sequence[str],
    compute: Callable[[Sequence[str]], Mapping[str, Samples]],
    folder: Path | None,
    chunk: int = 32,
) -> dict[str, Samples]:
    """Every judge's bootstrap samples of the groups ``groups``: read from ``folder`` where an
    entry for its key exists, computed by ``compute`` (``chunk`` judges at a time) and stored
    there otherwise. ``folder`` None: no cache."""
    return _read_or_compute(
        judges,
        None if folder is None else lambda j: read_samples(folder, keys[j], groups),
        compute,
        None if folder is None else lambda j, v: write_samples(folder, keys[j], v),
        chunk,
    )
