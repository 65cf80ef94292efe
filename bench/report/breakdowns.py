"""Figures per group of trajectories (source, category, subset, level), each with its interval.

A group is a set of whole trajectories (every grouping here is a trajectory attribute), scored
from the judges' summed statistics and bootstrapped on the report's shared draws, so a group's
interval is paired with every other figure. A group with fewer than ``MIN_PER_CLASS`` unsafe or
safe trajectories is flagged ``small``: its figures are printed greyed, never ranked or compared
(with 9 unsafe trajectories one trajectory moves recall by 0.11 and the interval spans most of
the scale).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bench.metrics.spec import BREAKDOWN_METRICS
from bench.report.scoring import Scored, cells

MIN_PER_CLASS = 10
"""A group needs at least this many unsafe and this many safe trajectories to be compared."""


def trajectory_attribute(
    sc: Scored, rows: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], str]
) -> np.ndarray:
    """``key`` of each trajectory of ``sc`` (index order), read from its first evaluated row."""
    out = np.empty(len(sc.index), dtype=object)
    seen = np.zeros(len(sc.index), dtype=bool)
    for code, r in zip(sc.index.code.tolist(), rows, strict=True):
        if not seen[code]:
            out[code] = key(r)
            seen[code] = True
    return out


def counts(sc: Scored, traj: np.ndarray) -> dict[str, Any]:
    """Sizes of the group ``traj`` (a trajectory mask) and whether it is ``small``."""
    rows = traj[sc.index.code]
    unsafe_t = int((sc.index.onset[traj] >= 0).sum())
    safe_t = int(traj.sum()) - unsafe_t
    return {
        "n_steps": int(sc.gold.scored[rows].sum()),
        "n_unsafe": int((sc.gold.scored[rows] & (sc.gold.act[rows] > 0)).sum()),
        "n_trajectories": int(traj.sum()),
        "n_unsafe_trajectories": unsafe_t,
        "n_safe_trajectories": safe_t,
        "small": min(unsafe_t, safe_t) < MIN_PER_CLASS,
    }


def group(
    sc: Scored, traj: np.ndarray, judges: Sequence[str], metrics: Sequence[str] = BREAKDOWN_METRICS
) -> dict[str, Any]:
    """One group: its sizes and every judge's figures with intervals."""
    boot = sc.boot(traj)
    entry = counts(sc, traj)
    points = [sc.point(j, traj, metrics) for j in judges]
    figures: dict[str, dict[str, Any]] = {j: {} for j in judges}
    for m in metrics:
        stack = np.stack([boot.samples[j][m] for j in judges]) if judges else np.empty((0, 0))
        for j, c in zip(judges, cells([p[m] for p in points], stack), strict=True):
            figures[j][m] = c
    entry["judges"] = figures
    return entry


def breakdown(
    sc: Scored, labels: np.ndarray, judges: Sequence[str], prefix: np.ndarray | None = None
) -> dict[str, Any]:
    """One group per distinct trajectory label (``labels``: one per trajectory), named
    ``<prefix>/<label>`` when ``prefix`` (e.g. the source) is given; empty labels skipped."""
    names = (
        labels.astype(str)
        if prefix is None
        else np.char.add(np.char.add(prefix.astype(str), "/"), labels.astype(str))
    )
    keep = labels.astype(str) != ""
    out: dict[str, Any] = {}
    for name in sorted(set(names[keep].tolist())):
        out[name] = group(sc, (names == name) & keep, judges)
    return out
