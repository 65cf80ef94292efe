"""Scoring every judge once, with one set of bootstrap draws shared by every figure.

``score`` aligns each judge's decisions to the evaluated ground-truth rows, turns each judge into
per-trajectory statistics (``bench.metrics.stats.judge_stats``) and draws the bootstrap weights
once, stratified by source (every resample keeps every source's size). Every interval of the
report (pooled, per source, the macro headline, per group, paired differences, margins over the
shortcut probes) comes from those same draws, so any two figures of one judge, or the same figure
of two judges, are paired.

The macro headline is the mean over the headline sources (the upstream ones: R-Judge, ASSEBench,
StepShield; the project's own sample only when no upstream source is present) of each source's
metric, resample by resample. Diagnostic configs (StepShield's templated items) are scored apart
and never enter the headline.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import IntegrityError
from bench.metrics.bootstrap import (
    Bootstrap,
    bootstrap_stats,
    macro,
    percentile_interval,
    resample_weights,
)
from bench.metrics.inputs import CostMatrix, Gold, InvalidPolicy, Predictions
from bench.metrics.point import JudgeScore, from_stats
from bench.metrics.stats import (
    METRICS,
    JudgeStats,
    TrajectoryIndex,
    judge_stats,
    metrics_from_stats,
)
from bench.report import cache as report_cache
from bench.report.columns import DecisionColumns
from bench.report.inputs import PredictionFile


def rnd(x: float | None, nd: int = 4) -> float | None:
    """Round a figure for output; NaN and None become None (JSON null)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), nd)


def cell(value: float, samples: np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    """``{"value", "ci"}`` of one figure from its point estimate and bootstrap samples."""
    lo, hi = percentile_interval(samples, (1 - confidence) / 2)
    return {"value": rnd(value), "ci": [rnd(lo), rnd(hi)]}


def cells(
    values: Sequence[float], samples: np.ndarray, confidence: float = 0.95
) -> list[dict[str, Any]]:
    """``[cell(v, s) for v, s in zip(values, samples)]`` for a stack of samples (one row per
    figure), the quantiles of every row without a NaN taken in one call (the same numbers:
    ``np.quantile`` along an axis interpolates each row as it does one array)."""
    tail = (1 - confidence) / 2
    s = np.asarray(samples, dtype=np.float64)
    out: list[dict[str, Any]] = [{} for _ in values]
    if s.ndim != 2 or len(s) != len(values) or s.shape[1] == 0:
        return [cell(v, x, confidence) for v, x in zip(values, s, strict=True)]
    clean = ~np.isnan(s).any(axis=1)
    if clean.any():
        qs = np.quantile(s[clean], [tail, 1 - tail], axis=1)
        for n, lo, hi in zip(np.flatnonzero(clean).tolist(), *qs.tolist(), strict=True):
            out[n] = {"value": rnd(values[n]), "ci": [rnd(lo), rnd(hi)]}
    for n in np.flatnonzero(~clean).tolist():
        out[n] = cell(values[n], s[n], confidence)
    return out


def diagnostic_configs(meta: Mapping[str, Any]) -> frozenset[str]:
    """The configs the ground truth's meta marks diagnostic (never in the headline)."""
    return frozenset(c for c, v in (meta.get("configs") or {}).items() if v.get("diagnostic"))


def headline_sources(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The sources the macro headline averages: the configs the build marked ``headline`` (the
    upstream sources and the contrast pairs; ``upstream`` in a ground truth written before the
    mark existed), never a diagnostic config, sorted; the project's own sample only when the
    ground truth has no such source."""
    configs = meta.get("configs") or {}
    upstream = sorted(
        {
            v.get("source", c)
            for c, v in configs.items()
            if v.get("headline", v.get("upstream")) and not v.get("diagnostic")
        }
    )
    if upstream:
        return tuple(upstream)
    return tuple(
        sorted({v.get("source", c) for c, v in configs.items() if not v.get("diagnostic")})
    )


def evaluated_rows(
    gt_rows: Sequence[Mapping[str, Any]],
    diagnostic: frozenset[str] = frozenset(),
    want_diagnostic: bool = False,
    reviewed_in: frozenset[str] = frozenset(),
    want_reviewed: bool = True,
) -> list[Mapping[str, Any]]:
    """The ground-truth rows the leaderboard scores: the test split, disputed rows left out, in
    (trajectory, k) order; rows of the configs in ``diagnostic`` only when ``want_diagnostic``,
    the others only when not. In the sources of ``reviewed_in`` (the headline's: its labels are
    reviewed gold only) a row counts only when its ``reviewed`` flag equals ``want_reviewed``;
    other sources' rows are kept only when ``want_reviewed``."""
    rows = [
        r
        for r in gt_rows
        if r.get("split") == "test"
        and not r.get("disputed")
        and (str(r.get("config") or r.get("source")) in diagnostic) == want_diagnostic
        and (
            bool(r.get("reviewed")) == want_reviewed
            if str(r.get("source")) in reviewed_in
            else want_reviewed
        )
    ]
    rows.sort(key=lambda r: (str(r["trajectory_id"]), int(r["k"])))
    return rows


BOOT_CHUNK = 32
"""Judges per bootstrap matrix product (``Scored.boot``): the product's operand grows with
trajectories x judges x risk values, about 0.7 GB for 500 judges at once."""


@dataclass(frozen=True, eq=False)
class Scored:
    """Every complete judge on one set of evaluated rows, with the shared bootstrap."""

    gold: Gold
    """The evaluated rows."""
    index: TrajectoryIndex
    """Their trajectories."""
    columns: Mapping[str, DecisionColumns]
    """Judge -> its checked decisions and timing fields, in gold order."""
    preds: Mapping[str, Predictions]
    """Judge -> its predictions, aligned to gold."""
    stats: Mapping[str, JudgeStats]
    """Judge -> per-trajectory statistics."""
    points: Mapping[str, JudgeScore]
    """Judge -> pooled point estimates."""
    weights: np.ndarray
    """(resamples, trajectories) bootstrap draws, stratified by source."""
    traj_source: np.ndarray
    """Source of each trajectory (index order)."""
    incomplete: list[dict[str, Any]] = field(default_factory=list)
    """Judges whose file misses some evaluated rows (not scored)."""
    cost: CostMatrix | None = None
    """The reward matrix."""

    @cached_property
    def rows(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """Judge -> the timing fields (latency_s, tokens_in, tokens_out, warmup) of its
        decisions as rows in gold order, built from ``columns`` when asked for: callers that
        read rows keep working; new code reads ``columns`` (no row per decision)."""
        return _Rows(self.columns)

    def boot(self, rows: np.ndarray | None = None) -> Bootstrap:
        """The bootstrap of every judge over the trajectories ``rows`` (a mask; None: all),
        ``BOOT_CHUNK`` judges per matrix product so memory stays flat as judges pile up (the
        same numbers: every product sums integer counts, exactly, in any grouping)."""
        assert self.cost is not None
        names = list(self.stats)
        parts = [
            bootstrap_stats(
                {j: self.stats[j] for j in names[i : i + BOOT_CHUNK]},
                len(self.index),
                self.cost,
                weights=self.weights,
                rows=rows,
            )
            for i in range(0, max(len(names), 1), BOOT_CHUNK)
        ]
        if len(parts) == 1:
            return parts[0]
        return replace(parts[0], samples={j: p.samples[j] for p in parts for j in p.samples})

    def traj_mask(self, row_mask: np.ndarray) -> np.ndarray:
        """The trajectories that hold any of the rows in ``row_mask``."""
        out = np.zeros(len(self.index), dtype=bool)
        out[self.index.code[row_mask]] = True
        return out

    def point(
        self, judge: str, traj: np.ndarray | None = None, only: Sequence[str] | None = None
    ) -> dict[str, float]:
        """A judge's point estimate of every metric (``only``: of those) on the trajectories
        ``traj`` (a mask; None: all), from its summed statistics (the same numbers ``evaluate``
        gives on those rows)."""
        assert self.cost is not None
        st = self.stats[judge]
        table = st.table if traj is None else st.table[traj]
        m = metrics_from_stats(table.sum(axis=0), st.values, self.cost, only)
        return {k: float(v[0]) for k, v in m.items()}


class _Rows(Mapping[str, Sequence[Mapping[str, Any]]]):
    """Judge -> the timing fields of its decisions as rows, built per judge on first access."""

    def __init__(self, columns: Mapping[str, DecisionColumns]) -> None:
        self._columns = columns
        self._built: dict[str, list[dict[str, Any]]] = {}

    def __getitem__(self, judge: str) -> Sequence[Mapping[str, Any]]:
        if judge not in self._built:
            c = self._columns[judge]
            lists = [
                [None if math.isnan(x) else x for x in getattr(c, k).tolist()] for k in _TIMING
            ]
            self._built[judge] = [
                {"latency_s": a, "tokens_in": b, "tokens_out": t, "warmup": w}
                for a, b, t, w in zip(*lists, c.warmup.tolist(), strict=True)
            ]
        return self._built[judge]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


_TIMING = ("latency_s", "tokens_in", "tokens_out")


@dataclass(frozen=True)
class Settings:
    """How every judge is scored: the reward matrix, the invalid-verdict policy and the
    bootstrap."""

    cost: CostMatrix
    """The reward matrix."""
    policy: InvalidPolicy = "CONTINUE"
    """The act an invalid verdict is scored as."""
    resamples: int = 1000
    """Bootstrap resamples."""
    seed: int = 0
    """Seed of the bootstrap draws."""


def score(
    gt_rows: Sequence[Mapping[str, Any]],
    evaluated: Sequence[Mapping[str, Any]],
    version: str,
    files: Mapping[str, PredictionFile],
    settings: Settings,
) -> Scored:
    """Align every judge's file to ``evaluated``; a file with ids outside the ground truth is
    refused loudly, one that misses some is listed as incomplete and not scored."""
    known = {str(r["id"]) for r in gt_rows}
    gold = Gold.from_rows(evaluated)
    ids = gold.ids.tolist()
    cols: dict[str, DecisionColumns] = {}
    preds: dict[str, Predictions] = {}
    incomplete: list[dict[str, Any]] = []
    for judge, f in files.items():
        pos = f.columns.position
        if not known.issuperset(pos):
            unknown = sorted(set(pos) - known)
            raise IntegrityError(
                f"predictions/{f.rel}: {len(unknown)} ids not in ground truth {version!r} (e.g. "
                f"{unknown[:3]}); the file was made for other data: delete it or rerun decide"
            )
        at = np.fromiter((pos.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        have = int((at >= 0).sum())
        if have < len(ids):
            incomplete.append(
                {"id": judge, "predictions": f.rel, "covered": have, "expected": len(ids)}
            )
            continue
        cols[judge] = f.columns.take(at)
        preds[judge] = cols[judge].predictions()
    index = TrajectoryIndex.of(gold)
    first_row = np.zeros(len(index), dtype=np.int64)
    first_row[index.code[::-1]] = np.arange(len(gold))[::-1]
    traj_source = gold.source[first_row] if len(gold) else np.array([], dtype=object)
    _, strata = np.unique(traj_source.astype(str), return_inverse=True)
    weights = resample_weights(len(index), settings.resamples, settings.seed, strata=strata)
    stats = {j: judge_stats(gold, p, index, settings.policy) for j, p in preds.items()}
    points = {j: from_stats(gold, p, stats[j], settings.cost) for j, p in preds.items()}
    return Scored(
        gold=gold,
        index=index,
        columns=cols,
        preds=preds,
        stats=stats,
        points=points,
        weights=weights,
        traj_source=traj_source,
        incomplete=incomplete,
        cost=settings.cost,
    )


@dataclass(frozen=True, eq=False)
class Headline:
    """The macro headline: per-source figures and their mean, with paired bootstraps."""

    sources: tuple[str, ...]
    """The sources averaged."""
    per_source: Mapping[str, Bootstrap]
    """Source -> the bootstrap over its trajectories."""
    per_source_point: Mapping[str, Mapping[str, Mapping[str, float]]]
    """Source -> judge -> metric -> point estimate."""
    boot: Bootstrap
    """The bootstrap of the mean over ``sources``."""
    point: Mapping[str, Mapping[str, float]]
    """Judge -> metric -> the mean over ``sources`` of the point estimates."""


def boots(
    sc: Scored, masks: Mapping[str, np.ndarray | None], folder: Path | None = None
) -> dict[str, Bootstrap]:
    """``sc.boot(mask)`` for every named trajectory mask (None: every trajectory), each judge's
    samples read from the report cache in ``folder`` when it holds them (``bench.report.cache``:
    keyed by the judge's statistics, the masks, the draws, the reward matrix and the code) and
    bootstrapped, ``BOOT_CHUNK`` judges at a time, otherwise. The same arrays either way."""
    names = list(sc.stats)
    if folder is None or not names:
        return {g: sc.boot(m) for g, m in masks.items()}
    assert sc.cost is not None
    full = np.ones(len(sc.index), dtype=bool)
    groups = {"boot": {g: full if m is None else m for g, m in masks.items()}}
    board = report_cache.board_key(groups, sc.weights, sc.cost, 0.95, METRICS)
    keys = {j: report_cache.judge_key(board, sc.stats[j]) for j in names}

    cost = sc.cost

    def compute(judges: Sequence[str]) -> dict[str, report_cache.Samples]:
        stats = {j: sc.stats[j] for j in judges}
        made = {
            g: bootstrap_stats(stats, len(sc.index), cost, weights=sc.weights, rows=m)
            for g, m in masks.items()
        }
        return {j: {g: dict(made[g].samples[j]) for g in masks} for j in judges}

    got = report_cache.judge_samples(names, keys, list(masks), compute, folder, BOOT_CHUNK)
    return {
        g: Bootstrap(
            samples={j: got[j][g] for j in names},
            resamples=sc.weights.shape[0],
            seed=0,
            confidence=0.95,
        )
        for g in masks
    }


def headline(sc: Scored, sources: Sequence[str], folder: Path | None = None) -> Headline:
    """Per-source bootstraps and point estimates for every source present, and their mean over
    ``sources`` (the headline sources present in the evaluated rows); ``folder``: the report
    cache (``boots``)."""
    present = sorted(set(sc.traj_source.tolist()))
    per = boots(sc, {s: sc.traj_source == s for s in present}, folder)
    per_point: dict[str, dict[str, dict[str, float]]] = {}
    for s in present:
        tmask = sc.traj_source == s
        per_point[s] = {j: sc.point(j, tmask) for j in sc.preds}
    chosen = tuple(s for s in sources if s in per)
    if not chosen:
        raise IntegrityError("no headline source among the evaluated rows: nothing to rank")
    boot = macro([per[s] for s in chosen])
    point = {
        j: {m: float(np.mean([per_point[s][j][m] for s in chosen])) for m in METRICS}
        for j in sc.preds
    }
    return Headline(chosen, per, per_point, boot, point)
