"""Benchmark of the leaderboard: its scoring core, and the whole command as judges pile up
(prints figures; not a test).

    python benchmarks/bench_leaderboard.py            # the target case and the scaling tables
    python benchmarks/bench_leaderboard.py --quick    # the target case only
    nice python benchmarks/bench_leaderboard.py --judges 10 50 200 500 --space
                                                      # leaderboard.py end to end (see below)

**The core** (no flag, or --quick):

Target: 50 judges x 20,000 decision points x 1,000 trajectory resamples in under 10 s on 2 cores.
Synthetic data: trajectories of 1..19 steps (10 on average), 40% unsafe with an onset; judges
with and without risk scores, 2% invalid and 1% errored verdicts. Timed: per-judge sufficient
statistics, the resampling matrix and the one matrix product, the metrics of every resample, the
percentile intervals, and the paired tie groups on one metric.

**End to end** (``--judges N [N ...]``): the committed board (leaderboards/predictions, stress
files included) plus N synthetic judges on the real ground truth: copies of one committed
judge's predictions (``--base``, default tfidf-lr) with 5-25% of acts changed (and their risk
redrawn), seeded. For each N, ``bench/leaderboard.py`` runs as a subprocess in a fresh work
folder (FORESIGHT_WORK, so the predictions cache starts empty: cold), again with the cache
present (warm), then ``--check`` on what it wrote; each run's wall time and peak memory (its own
rusage) are printed with the size of leaderboard.json and of every output. ``--space`` also
starts the Space on the outputs and times its first table in headless chromium (Playwright;
needs /usr/bin/chromium). Goals (issue 26, 2 cores): 500 judges <= 60 s cold and <= 10 s warm in
<= 4 GB, --check <= 60 s, the Space's table <= 3 s, the committed board (``--judges 0``) <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.metrics.bootstrap import bootstrap_stats, tie_groups
from bench.metrics.inputs import CostMatrix, Gold, Predictions, align
from bench.metrics.stats import METRICS, TrajectoryIndex, judge_stats, metrics_from_stats

REPO = Path(__file__).resolve().parents[1]
LEADERBOARDS = REPO / "leaderboards"
ACT_NAMES = ("CONTINUE", "ASK", "STOP")
RISK_RANGE = {"CONTINUE": (0, 30), "ASK": (30, 70), "STOP": (70, 101)}


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


# ------------------------------------------------------------------------------ end to end


def base_file(judge: str, version: str) -> Path:
    """The committed predictions file of ``judge`` for ``version`` (its main run)."""
    files = sorted((LEADERBOARDS / "predictions" / judge / version).glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no predictions of {judge!r} for dataset {version}: pass --base")
    return files[-1]


def synthesize(base: Path, out_root: Path, names: list[str], seed: int = 7) -> None:
    """One predictions file per name under ``out_root``: ``base`` with 5-25% of its decisions'
    acts changed (risk redrawn to fit the new act), seeded per name; the other lines are copied
    byte for byte."""
    lines = base.read_bytes().splitlines()
    parsed = [json.loads(x) for x in lines]
    decisions = [i for i, r in enumerate(parsed) if r.get("type") == "decision"]
    version = base.parent.name
    for n, name in enumerate(names):
        folder = out_root / name / version
        target = folder / base.name
        if target.is_file():
            continue
        rng = np.random.default_rng([seed, n])
        share = rng.uniform(0.05, 0.25)
        changed = {int(i) for i in rng.choice(decisions, int(share * len(decisions)), False)}
        out = []
        for i, (raw, row) in enumerate(zip(lines, parsed, strict=True)):
            if row.get("type") == "run":
                raw = json.dumps(row | {"judge": name, "judge_id": name}, sort_keys=True).encode()
            elif i in changed and row.get("status") in ("ok", "partial"):
                act = ACT_NAMES[(ACT_NAMES.index(row["act"]) + int(rng.integers(1, 3))) % 3]
                lo, hi = RISK_RANGE[act]
                new = row | {"act": act, "risk": int(rng.integers(lo, hi)), "binary": None}
                raw = json.dumps(new, sort_keys=True).encode()
            out.append(raw)
        folder.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"\n".join(out) + b"\n")


def board(root: Path, pool: Path, n: int) -> Path:
    """A predictions folder: the committed judges and the first ``n`` synthetic ones (links)."""
    pred = root / f"predictions-{n}"
    shutil.rmtree(pred, ignore_errors=True)
    pred.mkdir(parents=True)
    for d in sorted((LEADERBOARDS / "predictions").iterdir()):
        (pred / d.name).symlink_to(d, target_is_directory=True)
    for d in sorted(pool.iterdir())[:n]:
        (pred / d.name).symlink_to(d, target_is_directory=True)
    return pred


@dataclass(frozen=True)
class Run:
    """One timed subprocess."""

    wall_s: float
    """Wall time."""
    cpu_s: float
    """Its CPU time, user + system (less sensitive than wall time to a busy machine)."""
    peak_mb: float
    """Its peak resident memory (its own rusage), MB."""
    rc: int
    """Exit code."""
    tail: str
    """The end of its stderr."""


def timed(cmd: list[str], env: dict[str, str], timeout_s: float) -> Run:
    """Run ``cmd``; wall time and peak memory of that child alone (os.wait4)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        deadline = t0 + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-600:]
    cpu = usage.ru_utime + usage.ru_stime
    return Run(wall, cpu, usage.ru_maxrss / 1024, proc.returncode, tail)


def leaderboard_cmd(pred: Path, out: Path, *extra: str) -> list[str]:
    """``bench/leaderboard.py`` on the committed ground truth and ``pred``."""
    return [
        sys.executable,
        str(REPO / "bench" / "leaderboard.py"),
        "--ground-truth",
        str(LEADERBOARDS / "ground_truth.jsonl"),
        "--predictions",
        str(pred),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


def sizes(out: Path) -> tuple[float, float, str]:
    """(leaderboard.json MB, every output MB, the three largest outputs)."""
    files = [f for f in out.rglob("*") if f.is_file()]
    big = sorted(files, key=lambda f: -f.stat().st_size)[:3]
    lj = out / "leaderboard.json"
    return (
        lj.stat().st_size / 1e6 if lj.is_file() else float("nan"),
        sum(f.stat().st_size for f in files) / 1e6,
        ", ".join(f"{f.relative_to(out)} {f.stat().st_size / 1e6:.2f}" for f in big),
    )


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def space_first_table(out: Path, timeout_s: float = 180.0) -> tuple[float, float]:
    """(seconds until the Space answers, seconds from opening the page to its first table row)
    with the Space serving ``out`` on 127.0.0.1, in headless chromium (NaN when unavailable)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("  (no playwright: the Space is not timed)")
        return float("nan"), float("nan")
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        print("  (no /usr/bin/chromium: the Space is not timed)")
        return float("nan"), float("nan")
    for name in ("ground_truth.jsonl", "ground_truth.meta.json"):
        if not (out / name).exists():
            (out / name).symlink_to(LEADERBOARDS / name)
    port = free_port()
    cmd = [sys.executable, str(REPO / "space" / "app.py"), "--results", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while time.perf_counter() - t0 < timeout_s:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        ready = time.perf_counter() - t0
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(chromium), args=["--headless", "--no-sandbox"]
            )
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            t1 = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.wait_for_selector("#leaderboard-table .virtual-row", timeout=timeout_s * 1000)
            first = time.perf_counter() - t1
            browser.close()
        return ready, first
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def end_to_end(args: argparse.Namespace) -> int:
    """Time leaderboard.py (cold, warm, --check) and the Space at each number of judges."""
    version = json.loads((LEADERBOARDS / "ground_truth.meta.json").read_text())["dataset_version"]
    base = base_file(args.base, version)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-lb-"))
    pool = root / "synthetic"
    print(f"working in {root}; base {base.relative_to(REPO)}; dataset {version}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"cpus visible: {os.cpu_count()}; load average now {load} (wall times need a quiet machine)"
    )
    t = time.perf_counter()
    synthesize(base, pool, [f"synth-{i:03d}" for i in range(max(args.judges))])
    print(f"synthetic predictions: {max(args.judges)} files in {time.perf_counter() - t:.1f} s")
    header = (
        f"{'+judges':>7} {'cold s':>7} {'cpu s':>6} {'cold MB':>8} {'warm s':>7} {'cpu s':>6} "
        f"{'warm MB':>8} "
        f"{'check s':>8} {'json MB':>8} {'all MB':>7} {'space s':>8}  largest outputs (MB)"
    )
    lines: list[str] = []
    print(header, flush=True)
    try:
        for n in sorted(args.judges):
            pred = board(root, pool, n)
            out, work = root / f"out-{n}", root / f"work-{n}"
            for d in (out, work):  # cold means cold, also with --keep
                shutil.rmtree(d, ignore_errors=True)
            env = os.environ | {"FORESIGHT_WORK": str(work)}
            cold = timed(leaderboard_cmd(pred, out), env, args.timeout)
            warm = timed(leaderboard_cmd(pred, out), env, args.timeout)
            check = timed(leaderboard_cmd(pred, out, "--check"), env, args.timeout)
            for label, r in (("cold", cold), ("warm", warm), ("--check", check)):
                if r.rc != 0:
                    print(f"{n} judges, {label}: exit {r.rc}\n{r.tail}")
            js, total, big = sizes(out)
            space = space_first_table(out)[1] if args.space else float("nan")
            line = (
                f"{f'+{n}':>7} {cold.wall_s:7.1f} {cold.cpu_s:6.1f} {cold.peak_mb:8.0f} "
                f"{warm.wall_s:7.1f} {warm.cpu_s:6.1f} {warm.peak_mb:8.0f} {check.wall_s:8.1f} {js:8.2f} {total:7.1f} {space:8.2f}  {big}"
            )
            lines.append(line)
            print(line, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("\n" + header, *lines, sep="\n")
    print(
        "judges: the committed board (its judges and probes) plus N synthetic ones. Goals at 500 "
        "(2 cores): cold <= 60 s, warm <= 10 s, <= 4,000 MB, --check <= 60 s, Space <= 3 s; "
        "the committed board (--judges 0) <= 5 s."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the target case, then vary judges, points and resamples one at a time."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="only the target case")
    ap.add_argument(
        "--judges",
        type=int,
        nargs="+",
        metavar="N",
        help="time leaderboard.py end to end with N synthetic judges added (e.g. 10 50 200 500)",
    )
    ap.add_argument("--base", default="tfidf-lr", help="committed judge the synthetic ones copy")
    ap.add_argument("--space", action="store_true", help="also time the Space's first table")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temp dir)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per leaderboard run")
    args = ap.parse_args(argv)
    if args.judges:
        return end_to_end(args)
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
