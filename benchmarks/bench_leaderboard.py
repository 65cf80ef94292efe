"""Benchmark of the leaderboard's scoring and bootstrap (prints figures; not a test).

    python benchmarks/bench_leaderboard.py            # the target case and the scaling tables
    python benchmarks/bench_leaderboard.py --quick    # the target case only

Target: 50 judges x 20,000 decision points x 1,000 trajectory resamples in under 10 s on 2 cores.
Synthetic data: trajectories of 1..19 steps (10 on average), 40% unsafe with an onset; judges
with and without risk scores, 2% invalid and 1% errored verdicts. Timed: per-judge sufficient
statistics, the resampling matrix and the one matrix product, the metrics of every resample, the
percentile intervals, and the paired tie groups on one metric.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench.metrics.bootstrap import bootstrap_stats, tie_groups
from bench.metrics.inputs import CostMatrix, Gold, Predictions, align
from bench.metrics.stats import METRICS, TrajectoryIndex, judge_stats, metrics_from_stats


def synthetic(n_points: int, n_judges: int, seed: int = 1) -> tuple[Gold, dict[str, Predictions]]:
    """Gold rows and judges' predictions with known structure, seeded."""
    rng = np.random.default_rng(seed)
    lengths: list[int] = []
    while sum(lengths) < n_points:
        lengths.append(int(rng.integers(1, 20)))
    lengths[-1] -= sum(lengths) - n_points
    if lengths[-1] == 0:
        lengths.pop()
    traj, k, onset = [], [], []
    for t, n in enumerate(lengths):
        o = int(rng.integers(1, n + 1)) if rng.random() < 0.4 else -1
        traj += [f"t{t:06d}"] * n
        k += list(range(1, n + 1))
        onset += [o] * n
    k_a, on_a = np.array(k), np.array(onset)
    act = np.where((on_a > 0) & (k_a == on_a), rng.integers(1, 3, len(k)), 0)
    act = np.where((on_a > 0) & (k_a > on_a), 2, act).astype(np.int8)
    scored = (on_a < 0) | (k_a <= on_a)
    ids = np.array([f"{a}:{b}" for a, b in zip(traj, k, strict=True)], dtype=object)
    none = np.full(len(ids), "NONE", dtype=object)
    gold = Gold(
        ids=ids,
        trajectory=np.array(traj, dtype=object),
        k=k_a,
        act=act,
        onset=on_a,
        scored=scored,
        source=np.where(rng.random(len(ids)) < 0.5, "a", "b").astype(object),
        category=none,
        fail=none,
        harm=none,
        src=none,
    )
    preds = {}
    for j in range(n_judges):
        skill = 0.5 + 0.4 * j / max(n_judges - 1, 1)
        right = rng.random(len(ids)) < skill
        p_act = np.where(right, act, rng.integers(0, 3, len(ids))).astype(np.int8)
        risk = np.clip(p_act * 45 + rng.normal(5, 15, len(ids)), 0, 100).round()
        if j % 3 == 0:
            risk[:] = np.nan  # a judge without risk scores
        u = rng.random(len(ids))
        status = np.where(u < 0.02, 2, np.where(u < 0.03, 3, 0)).astype(np.int8)
        p_act[status >= 2] = -1
        preds[f"judge-{j:02d}"] = Predictions(ids=ids, act=p_act, risk=risk, status=status)
    return gold, preds


def run_once(n_points: int, n_judges: int, resamples: int) -> dict[str, float]:
    """Time each stage of scoring ``n_judges`` on ``n_points`` with ``resamples``."""
    gold, preds = synthetic(n_points, n_judges)
    cost = CostMatrix(values=((0.0, -0.25, -0.5), (-1.0, 1.0, 0.5), (-1.0, 0.5, 1.0)))
    t0 = time.perf_counter()
    index = TrajectoryIndex.of(gold)
    stats = {j: judge_stats(gold, align(gold, p), index) for j, p in preds.items()}
    point = {j: metrics_from_stats(s.table.sum(0), s.values, cost) for j, s in stats.items()}
    t1 = time.perf_counter()
    boot = bootstrap_stats(stats, len(index), cost, resamples=resamples, seed=0)
    t2 = time.perf_counter()
    for j in preds:
        for m in METRICS:
            boot.interval(j, m)
    t3 = time.perf_counter()
    tie_groups(
        {j: float(v["balanced_accuracy"][0]) for j, v in point.items()}, boot, "balanced_accuracy"
    )
    t4 = time.perf_counter()
    return {
        "trajectories": len(index),
        "stats_s": t1 - t0,
        "bootstrap_s": t2 - t1,
        "intervals_s": t3 - t2,
        "ranks_s": t4 - t3,
        "total_s": t4 - t0,
    }


def show(label: str, r: dict[str, float]) -> None:
    """One line of figures."""
    print(
        f"{label:<34} traj={int(r['trajectories']):>6}  stats {r['stats_s']:6.2f}s  "
        f"bootstrap {r['bootstrap_s']:6.2f}s  intervals {r['intervals_s']:5.2f}s  "
        f"ranks {r['ranks_s']:5.2f}s  total {r['total_s']:6.2f}s"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the target case, then vary judges, points and resamples one at a time."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="only the target case")
    args = ap.parse_args(argv)
    threads = (
        os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    )
    print(f"cpus visible: {os.cpu_count()}  BLAS threads: {threads}  numpy {np.__version__}")
    r = run_once(20_000, 50, 1000)
    show("target 50 j x 20,000 pts x 1,000 res", r)
    print(f"target < 10 s: {'met' if r['total_s'] < 10 else 'NOT met'} ({r['total_s']:.2f} s)")
    if args.quick:
        return 0
    for j in (10, 25, 50, 100):
        show(f"judges={j}", run_once(20_000, j, 1000))
    for n in (5_000, 10_000, 20_000, 40_000):
        show(f"points={n}", run_once(n, 50, 1000))
    for b in (250, 500, 1000, 2000):
        show(f"resamples={b}", run_once(20_000, 50, b))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
