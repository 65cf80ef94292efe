"""Trajectory bootstrap of every metric and the tie-group ranking built on it.

Trajectories are resampled with replacement (a fixed seed); every judge is rescored on the same
draws by one (resamples x trajectories) @ (trajectories x statistics) matrix product, so the
intervals of two judges are paired. ``tie_groups`` and ``paired_interval`` ask whether the paired
difference of two judges excludes 0; the tie groups ask it of at most one pair per judge (each
judge against the first judge of the group it may join), so ranking n judges makes at most n - 1
paired comparisons per metric. Any other pair is computed when asked (``bench.metrics.paired``).
Callers import from this module directly.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bench.metrics.inputs import CostMatrix, Gold, InvalidPolicy, Predictions, align
from bench.metrics.spec import HIGHER_IS_BETTER
from bench.metrics.stats import (
    JudgeStats,
    TrajectoryIndex,
    judge_stats,
    metrics_from_stats,
)


def resample_weights(
    n_traj: int, resamples: int, seed: int, strata: np.ndarray | None = None
) -> np.ndarray:
    """(resamples, n_traj) float32 draw counts: each row resamples the trajectories with
    replacement, within each stratum when ``strata`` (a code per trajectory) is given, so every
    source keeps its size in every resample. Counts are small integers, exact in float32, so the
    matrix products that use them give exact integer sums."""
    rng = np.random.default_rng(seed)
    codes = np.zeros(n_traj, dtype=np.int64) if strata is None else np.asarray(strata)
    counts = np.zeros(resamples * n_traj, dtype=np.int64)
    offsets = (np.arange(resamples, dtype=np.int64) * n_traj)[:, None]
    for code in np.unique(codes):
        members = np.flatnonzero(codes == code)
        draws = members[rng.integers(0, len(members), size=(resamples, len(members)))]
        counts += np.bincount((draws + offsets).ravel(), minlength=resamples * n_traj)
    return counts.reshape(resamples, n_traj).astype(np.float32)


@dataclass(frozen=True, eq=False)
class Bootstrap:
    """Bootstrap samples of every metric for every judge, all from the same resamples (paired)."""

    samples: Mapping[str, Mapping[str, np.ndarray]]
    """judge -> metric -> (resamples,) values."""
    resamples: int
    """Number of resamples."""
    seed: int
    """Seed of the trajectory resampling."""
    confidence: float
    """Coverage of the percentile intervals."""

    def interval(self, judge: str, metric: str) -> tuple[float, float]:
        """Percentile interval (NaN resamples, e.g. with no unsafe trajectory drawn, ignored)."""
        return percentile_interval(self.samples[judge][metric], (1 - self.confidence) / 2)


def bootstrap(
    gold: Gold,
    preds: Mapping[str, Predictions],
    cost: CostMatrix,
    *,
    policy: InvalidPolicy = "CONTINUE",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Bootstrap:
    """Resample trajectories ``resamples`` times (fixed ``seed``) and recompute every metric for
    every judge on the same draws: one (resamples x trajectories) @ (trajectories x stats)
    product for all judges together."""
    index = TrajectoryIndex.of(gold)
    stats = {j: judge_stats(gold, align(gold, p), index, policy) for j, p in preds.items()}
    return bootstrap_stats(
        stats, len(index), cost, resamples=resamples, seed=seed, confidence=confidence
    )


def bootstrap_stats(
    stats: Mapping[str, JudgeStats],
    n_traj: int,
    cost: CostMatrix,
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    weights: np.ndarray | None = None,
    rows: np.ndarray | None = None,
    only: Collection[str] | None = None,
) -> Bootstrap:
    """The bootstrap from precomputed statistics (``bootstrap`` without the per-judge step).
    ``weights`` (from ``resample_weights``) lets several calls share one set of draws, so the
    intervals of a group, of a source and of the whole test split are all paired; ``rows`` (a
    boolean mask over trajectories) scores only those trajectories of every draw; ``only``
    (metric names) computes just those metrics, the same figures (``metrics_from_stats``): a
    breakdown that shows no ECE or Brier skips the calibration work."""
    if not stats:
        return Bootstrap(samples={}, resamples=resamples, seed=seed, confidence=confidence)
    w = resample_weights(n_traj, resamples, seed) if weights is None else weights
    if rows is not None:
        w = w[:, rows]
    names = list(stats)
    big = np.hstack(
        [
            (stats[j].table if rows is None else stats[j].table[rows]).astype(np.float32)
            for j in names
        ]
    )
    summed = w @ big
    out: dict[str, dict[str, np.ndarray]] = {}
    off = 0
    for j in names:
        width = stats[j].table.shape[1]
        out[j] = metrics_from_stats(summed[:, off : off + width], stats[j].values, cost, only)
        off += width
    return Bootstrap(samples=out, resamples=w.shape[0], seed=seed, confidence=confidence)


def macro(boots: Sequence[Bootstrap]) -> Bootstrap:
    """The bootstrap of the mean over groups (sources) of each metric, resample by resample:
    ``boots`` must share their draws (one ``weights`` matrix, stratified by group)."""
    if not boots:
        raise ValueError("macro() needs at least one group")
    first = boots[0]
    out: dict[str, dict[str, np.ndarray]] = {}
    for j in first.samples:
        out[j] = {
            m: np.mean(np.stack([b.samples[j][m] for b in boots]), axis=0) for m in first.samples[j]
        }
    return Bootstrap(
        samples=out, resamples=first.resamples, seed=first.seed, confidence=first.confidence
    )


@dataclass(frozen=True)
class Rank:
    """A judge's place on one metric."""

    rank: int
    """1 + number of judges in better tie groups (judges in one group share it)."""
    group: int
    """1-based tie group."""


def tie_groups(
    point: Mapping[str, float],
    boot: Bootstrap,
    metric: str,
    *,
    alpha: float = 0.05,
) -> dict[str, Rank]:
    """Ranks with tie groups on ``metric``. Judges are sorted by point estimate (ties by id); the
    best unassigned judge leads a group, and the judges after it join while the paired bootstrap
    interval (1 - alpha) of their difference from it contains 0. The group closes at the first
    significant difference, so groups follow the point order. NaN point estimates come last,
    each in its own group. At most ``len(point) - 1`` paired comparisons (``rank_in_groups``)."""

    def significant(lead: str, j: str) -> bool:
        return _significant(boot.samples[lead][metric], boot.samples[j][metric], alpha)

    return rank_in_groups(point, metric, significant)


def rank_in_groups(
    point: Mapping[str, float], metric: str, significant: Callable[[str, str], bool]
) -> dict[str, Rank]:
    """The tie groups of ``tie_groups`` with the paired test given as ``significant(lead, j)``
    (True when j differs from ``lead``, the first judge of the group j may join). It is asked
    only of (first judge of the open group, next judge in point order), and every judge is the
    second of at most one such pair: n judges need at most n - 1 comparisons, never all
    n(n - 1)/2 pairs."""
    sign = 1.0 if HIGHER_IS_BETTER[metric] else -1.0

    def key(j: str) -> tuple[int, float, str]:
        v = point[j]
        return (1, 0.0, j) if np.isnan(v) else (0, -sign * v, j)

    order = sorted(point, key=key)
    ranks: dict[str, Rank] = {}
    i, group = 0, 0
    while i < len(order):
        lead = order[i]
        group += 1
        members = [lead]
        if not np.isnan(point[lead]):
            for j in order[i + 1 :]:
                if np.isnan(point[j]) or significant(lead, j):
                    break
                members.append(j)
        for j in members:
            ranks[j] = Rank(rank=i + 1, group=group)
        i += len(members)
    return ranks


def _significant(a: np.ndarray, b: np.ndarray, alpha: float) -> bool:
    """True when the paired percentile interval of a - b excludes 0."""
    lo, hi = percentile_interval(a - b, alpha / 2)
    return bool(lo > 0 or hi < 0)  # False when every difference is NaN (lo, hi NaN)


def paired_interval(boot: Bootstrap, a: str, b: str, metric: str) -> tuple[float, float]:
    """Percentile interval (``boot.confidence``) of the paired bootstrap difference a - b on
    ``metric``: both judges on the same trajectory draws, NaN resamples ignored. The Space's
    Compare tab shows it (``bench.metrics.paired``); ``tie_groups`` asks the same question of
    the leader of each group."""
    d = boot.samples[a][metric] - boot.samples[b][metric]
    return percentile_interval(d, (1 - boot.confidence) / 2)


def percentile_interval(x: np.ndarray, tail: float) -> tuple[float, float]:
    """The (tail, 1 - tail) quantiles of ``x`` with NaN values dropped; (NaN, NaN) when none is
    left (e.g. every resample drew no unsafe trajectory)."""
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(x, [tail, 1 - tail])
    return (float(lo), float(hi))
