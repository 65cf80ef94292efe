"""The robustness bootstrap without the resamples x rows matrix gives the former figures to the bit.

The former code built ``w = tw[:, inv]`` (resamples x evaluated rows) with ``np.add.at`` and took
``w @ v`` per balanced-accuracy term; the new code draws the same counts with one ``bincount``,
sums each row value per trajectory and multiplies by the counts. Every sum is of integers, so the
two must agree exactly (``array_equal``, not ``allclose``), NaN resamples included. Also: the
bootstrap-only metrics (``bootstrap_stats(only=...)``) equal the full call's on those metrics.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.metrics.bootstrap import bootstrap_stats
from bench.metrics.inputs import CostMatrix
from bench.metrics.spec import BREAKDOWN_METRICS
from bench.metrics.stats import JudgeStats
from bench.report import robustness as rob


def _former_counts(rng: np.random.Generator, m: int) -> np.ndarray:
    draws = rng.integers(0, m, size=(rob.RESAMPLES, m))
    tw = np.zeros((rob.RESAMPLES, m))
    np.add.at(tw, (np.arange(rob.RESAMPLES)[:, None], draws), 1.0)
    return tw


def _former_ba(unsafe: np.ndarray, flag: np.ndarray, w: np.ndarray) -> np.ndarray:
    pos, neg = unsafe.astype(np.float64), (~unsafe).astype(np.float64)
    f = flag.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = (w @ (pos * f)) / (w @ pos)
        spec = (w @ (neg * (1 - f))) / (w @ neg)
    return (recall + spec) / 2


def _case(seed: int, n_traj: int, one_class: bool) -> tuple[np.ndarray, ...]:
    """Rows grouped in trajectories (unsorted codes, uneven sizes) with gold and two verdicts."""
    g = np.random.default_rng(seed)
    codes = g.integers(0, n_traj, size=n_traj * 4)
    codes[:n_traj] = np.arange(n_traj)  # every trajectory has a row
    g.shuffle(codes)
    unsafe = np.zeros(len(codes), bool) if one_class else g.random(len(codes)) < 0.3
    orig = g.random(len(codes)) < 0.4
    flag = np.where(g.random(len(codes)) < 0.2, ~orig, orig)
    return codes, unsafe, orig, flag


@pytest.mark.parametrize("seed", range(6))
def test_draw_counts_equal_add_at(seed: int) -> None:
    for m in (1, 7, 300):
        new = rob._draw_counts(np.random.default_rng(seed), m)
        old = _former_counts(np.random.default_rng(seed), m)
        assert new.dtype == old.dtype and np.array_equal(new, old)


@pytest.mark.parametrize(("seed", "n_traj", "one_class"), [(0, 5, False), (1, 40, False),
                                                          (2, 250, False), (3, 12, True)])  # fmt: skip
def test_delta_and_point_bit_identical(seed: int, n_traj: int, one_class: bool) -> None:
    codes, unsafe, orig, flag = _case(seed, n_traj, one_class)
    uniq, inv = np.unique(codes, return_inverse=True)
    tw = _former_counts(np.random.default_rng(seed), len(uniq))
    w = tw[:, inv]
    pos, neg = rob._weighted(tw, inv, np.stack([unsafe, ~unsafe], axis=1).astype(np.float64)).T
    d = rob._Draws(tw, inv, pos, neg)
    new = rob._ba_delta(unsafe, orig, flag, d)
    old = _former_ba(unsafe, flag, w) - _former_ba(unsafe, orig, w)
    assert np.array_equal(new, old, equal_nan=True)
    assert np.isnan(new).all() == one_class
    one = np.ones((1, len(codes)))
    for f in (orig, flag):
        a, b = rob._ba_point(unsafe, f), float(_former_ba(unsafe, f, one)[0])
        assert a == b or (np.isnan(a) and np.isnan(b))


def test_weighted_equals_the_rows_product() -> None:
    codes, unsafe, orig, _ = _case(7, 60, False)
    uniq, inv = np.unique(codes, return_inverse=True)
    tw = _former_counts(np.random.default_rng(7), len(uniq))
    values = np.stack([unsafe, orig, unsafe & orig], axis=1).astype(np.float64)
    assert np.array_equal(rob._weighted(tw, inv, values), tw[:, inv] @ values)


def test_bootstrap_only_gives_the_same_figures() -> None:
    g = np.random.default_rng(3)
    values = np.arange(0, 101, 10)
    width = 19 + 2 * len(values)

    def stats() -> JudgeStats:
        table = g.integers(0, 4, size=(30, width)).astype(np.int64)
        return JudgeStats(table=table, values=values, risk_from_act=0.0)

    judges = {"a": stats(), "b": stats()}
    cost = CostMatrix(((1.0, -0.2, -0.5), (-1.0, 0.5, 1.0), (-1.0, 0.3, 1.0)))
    full = bootstrap_stats(judges, 30, cost, resamples=50, seed=1)
    part = bootstrap_stats(judges, 30, cost, resamples=50, seed=1, only=BREAKDOWN_METRICS)
    for j in judges:
        assert set(part.samples[j]) == set(BREAKDOWN_METRICS)
        assert "ece" in full.samples[j] and "ece" not in part.samples[j]
        for m in BREAKDOWN_METRICS:
            assert np.array_equal(part.samples[j][m], full.samples[j][m], equal_nan=True)
