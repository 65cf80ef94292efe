"""The leaderboard as one JSON-able dict (``leaderboard.json``, layout in docs/metrics.md).

``build_report`` is a pure function of the ground-truth rows, the chosen predictions files, the
judges.toml rows and the reward matrix: it scores every complete judge with ``bench.metrics``
(point estimates, trajectory-bootstrap intervals, tie-group ranks), breaks the metrics down by
source and category, and carries the paired differences the Space's Compare tab shows. Every
table and plot is rendered from this dict alone (``bench.report.tables``, ``bench.report.plots``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.core.errors import ConfigError, IntegrityError
from bench.core.jsonl import canonical_json
from bench.core.labels import ACTS
from bench.core.verdict import ASK_UNSAFE_AT
from bench.metrics.bootstrap import Bootstrap, bootstrap_stats, paired_interval, tie_groups
from bench.metrics.inputs import CostMatrix, Gold, InvalidPolicy, Predictions
from bench.metrics.point import (
    JudgeScore,
    cost_per_thousand,
    evaluate,
    group_masks,
    latency_percentiles,
)
from bench.metrics.stats import (
    ECE_BINS,
    HIGHER_IS_BETTER,
    METRICS,
    RISK_FROM_ACT,
    TrajectoryIndex,
    judge_stats,
)
from bench.report.inputs import JudgeInfo, PredictionFile

SCHEMA = "foresight-leaderboard/1"
"""Version tag of the JSON layout (docs/metrics.md)."""
RESAMPLES = 1000
SEED = 20240601
BREAKDOWN_METRICS = (
    "balanced_accuracy",
    "auroc",
    "f1",
    "recall",
    "specificity",
    "reward",
    "caught",
    "safe_interrupted",
    "traj_f1",
    "traj_recall",
    "traj_specificity",
)
"""Metrics shown in the per-source and per-category tables (the JSON holds them all)."""
LABELS = {
    "balanced_accuracy": "Bal. acc.",
    "auroc": "AUROC",
    "f1": "F1",
    "precision": "Precision",
    "recall": "Recall",
    "specificity": "Specificity",
    "miss_rate": "Miss rate",
    "false_alarm_rate": "False alarm",
    "false_ask_rate": "False ask",
    "reward": "Reward",
    "parse_rate": "Parse rate",
    "invalid_rate": "Invalid",
    "error_rate": "Error",
    "ece": "ECE",
    "brier": "Brier",
    "caught": "Caught",
    "exact": "At onset",
    "early": "Early",
    "late": "Late",
    "missed": "Missed",
    "safe_interrupted": "Safe interrupted",
    "traj_f1": "Traj. F1",
    "traj_recall": "Traj. recall",
    "traj_specificity": "Traj. specificity",
}


def _r(x: float | None, nd: int = 4) -> float | None:
    """Round for output; NaN and None become null."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), nd)


def _col(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    return np.array(
        [np.nan if r.get(key) is None else float(r[key]) for r in rows], dtype=np.float64
    )


@dataclass(frozen=True)
class _Scored:
    """The evaluated gold rows and every complete judge's predictions aligned to them."""

    gold: Gold
    index: TrajectoryIndex
    rows: Mapping[str, Sequence[Mapping[str, Any]]]
    """Judge -> its decision rows in gold order."""
    preds: Mapping[str, Predictions]
    incomplete: list[dict[str, Any]]


def evaluated_rows(gt_rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ground-truth rows the leaderboard scores: the test split, disputed rows left out, in
    (trajectory, k) order."""
    rows = [r for r in gt_rows if r.get("split") == "test" and not r.get("disputed")]
    rows.sort(key=lambda r: (str(r["trajectory_id"]), int(r["k"])))
    return rows


def _score_files(
    gt_rows: Sequence[Mapping[str, Any]], version: str, files: Mapping[str, PredictionFile]
) -> _Scored:
    """Align every judge's file to the evaluated rows; a file with ids outside the ground truth
    is refused loudly, one that misses some is listed as incomplete and not ranked."""
    known = {str(r["id"]) for r in gt_rows}
    gold = Gold.from_rows(evaluated_rows(gt_rows))
    ids = gold.ids.tolist()
    rows_of: dict[str, list[Mapping[str, Any]]] = {}
    preds: dict[str, Predictions] = {}
    incomplete: list[dict[str, Any]] = []
    for judge, f in files.items():
        unknown = sorted(set(f.decisions) - known)
        if unknown:
            raise IntegrityError(
                f"predictions/{f.rel}: {len(unknown)} ids not in ground truth {version!r} (e.g. "
                f"{unknown[:3]}); the file was made for other data: delete it or rerun decide"
            )
        have = [i for i in ids if i in f.decisions]
        if len(have) < len(ids):
            incomplete.append(
                {"id": judge, "predictions": f.rel, "covered": len(have), "expected": len(ids)}
            )
            continue
        rows_of[judge] = [f.decisions[i] for i in ids]
        preds[judge] = Predictions.from_rows(rows_of[judge])
    return _Scored(gold, TrajectoryIndex.of(gold), rows_of, preds, incomplete)


def _metric_cells(score: JudgeScore, boot: Bootstrap, judge: str) -> dict[str, Any]:
    return {
        m: {"value": _r(score.metrics[m]), "ci": [_r(v) for v in boot.interval(judge, m)]}
        for m in METRICS
    }


def _judge_entry(
    j: str,
    score: JudgeScore,
    boot: Bootstrap,
    ranks: Mapping[str, Mapping[str, Any]],
    rank_metric: str,
    rows: Sequence[Mapping[str, Any]],
    f: PredictionFile,
    info: JudgeInfo | None,
) -> dict[str, Any]:
    """One judge's entry of ``report["judges"]``."""
    warm = np.array([bool(r.get("warmup")) for r in rows])
    p50, p95, nlat = latency_percentiles(_col(rows, "latency_s"), warm)
    price_in = info.price_input_per_mtok if info else None
    price_out = info.price_output_per_mtok if info else None
    hardware = sorted(
        {h if isinstance(h, str) else canonical_json(h) for r in f.runs if (h := r.get("hardware"))}
    )
    return {
        "id": j,
        "display_name": info.display_name if info else j,
        "backend": info.backend if info else "",
        "open_weights": info.open_weights if info else None,
        "in_judges_toml": info is not None,
        "predictions": f.rel,
        "config_hash": f.config_hash,
        "rank": ranks[rank_metric][j].rank,
        "tie_group": ranks[rank_metric][j].group,
        "ranks": {m: {"rank": ranks[m][j].rank, "tie_group": ranks[m][j].group} for m in METRICS},
        "metrics": _metric_cells(score, boot, j),
        "counts": dict(score.counts),
        "risk_from_act": _r(score.risk_from_act),
        "taxonomy": {k: {"accuracy": _r(a), "n": n} for k, (a, n) in score.taxonomy.items()},
        "latency": {"p50_s": _r(p50), "p95_s": _r(p95), "n": nlat, "hardware": "; ".join(hardware)},
        "cost_per_1000": _r(
            cost_per_thousand(
                _col(rows, "tokens_in"), _col(rows, "tokens_out"), warm, price_in, price_out
            )
        ),
        "curves": {
            "roc": [[_r(a), _r(b)] for a, b in score.roc],
            "reliability": [
                {"n": n, "mean_risk": _r(c), "unsafe_share": _r(u)} for n, c, u in score.reliability
            ],
        },
    }


def _rank_order(entries: list[dict[str, Any]], rank_metric: str) -> None:
    """Sort judge entries by rank, then point estimate (undefined last), then id."""
    sign = 1 if HIGHER_IS_BETTER[rank_metric] else -1
    entries.sort(
        key=lambda e: (
            e["rank"],
            e["metrics"][rank_metric]["value"] is None,
            -sign * (e["metrics"][rank_metric]["value"] or 0.0),
            e["id"],
        )
    )


def _breakdown(
    sc: _Scored,
    labels: np.ndarray,
    order: Sequence[str],
    cost: CostMatrix,
    policy: InvalidPolicy,
) -> dict[str, Any]:
    """Every metric per group (source or category) for every ranked judge, with the group's n."""
    out: dict[str, Any] = {}
    for name, mask in group_masks(labels).items():
        g = sc.gold.subset(mask)
        unsafe_traj = {
            t for t, o in zip(g.trajectory.tolist(), g.onset.tolist(), strict=True) if o >= 0
        }
        entry: dict[str, Any] = {
            "n_steps": int(g.scored.sum()),
            "n_unsafe": int((g.scored & (g.act > 0)).sum()),
            "n_trajectories": len(set(g.trajectory.tolist())),
            "n_unsafe_trajectories": len(unsafe_traj),
            "judges": {},
        }
        for j in order:
            score = evaluate(g, sc.preds[j].take(mask), cost, policy)
            entry["judges"][j] = {m: _r(score.metrics[m]) for m in METRICS}
        out[name] = entry
    return out


def _ground_truth_summary(
    gt_rows: Sequence[Mapping[str, Any]], sc: _Scored, gt_sha256: str
) -> dict[str, Any]:
    gold = sc.gold
    steps = int(gold.scored.sum())
    unsafe = int((gold.scored & (gold.act > 0)).sum())
    return {
        "sha256": gt_sha256,
        "rows": len(gt_rows),
        "evaluated_rows": len(gold),
        "steps": steps,
        "unsafe_steps": unsafe,
        "safe_steps": steps - unsafe,
        "trajectories": len(sc.index),
        "unsafe_trajectories": int((sc.index.onset >= 0).sum()),
        "disputed_excluded": sum(
            1 for r in gt_rows if r.get("split") == "test" and r.get("disputed")
        ),
        "sources": sorted(set(gold.source.tolist())),
    }


def _settings(
    rank_metric: str, policy: InvalidPolicy, resamples: int, seed: int, cost: CostMatrix
) -> dict[str, Any]:
    return {
        "rank_metric": rank_metric,
        "invalid_policy": policy,
        "resamples": resamples,
        "seed": seed,
        "confidence": 0.95,
        "ask_unsafe_at": ASK_UNSAFE_AT,
        "risk_from_act": dict(RISK_FROM_ACT),
        "ece_bins": ECE_BINS,
        "cost_matrix": {
            g: dict(zip(ACTS, row, strict=True)) for g, row in zip(ACTS, cost.values, strict=True)
        },
    }


def build_report(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    files: Mapping[str, PredictionFile],
    judges: Mapping[str, JudgeInfo],
    cost: CostMatrix,
    *,
    refused: Sequence[Mapping[str, str]] = (),
    superseded: Sequence[Mapping[str, str]] = (),
    rank_metric: str = "balanced_accuracy",
    policy: InvalidPolicy = "CONTINUE",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    gt_sha256: str = "",
) -> dict[str, Any]:
    """The whole leaderboard as one JSON-able dict (layout in docs/metrics.md). Pure."""
    if rank_metric not in HIGHER_IS_BETTER:
        raise ConfigError(
            f"--metric {rank_metric!r} is not a metric; choose one of {', '.join(METRICS)}"
        )
    version = str(meta["dataset_version"])
    sc = _score_files(gt_rows, version, files)
    stats = {j: judge_stats(sc.gold, p, sc.index, policy) for j, p in sc.preds.items()}
    boot = bootstrap_stats(stats, len(sc.index), cost, resamples=resamples, seed=seed)
    points = {j: evaluate(sc.gold, p, cost, policy) for j, p in sc.preds.items()}
    ranks = {m: tie_groups({j: s.metrics[m] for j, s in points.items()}, boot, m) for m in METRICS}
    entries = [
        _judge_entry(j, points[j], boot, ranks, rank_metric, sc.rows[j], files[j], judges.get(j))
        for j in sc.preds
    ]
    _rank_order(entries, rank_metric)
    order = [e["id"] for e in entries]
    not_yet = [
        {
            "id": j,
            "display_name": info.display_name,
            "reason": "no predictions for this dataset version",
        }
        for j, info in sorted(judges.items())
        if j not in files
    ]
    return {
        "schema": SCHEMA,
        "dataset_version": version,
        "ground_truth": _ground_truth_summary(gt_rows, sc, gt_sha256),
        "settings": _settings(rank_metric, policy, resamples, seed, cost),
        "metrics": [
            {"name": m, "label": LABELS[m], "higher_is_better": HIGHER_IS_BETTER[m]}
            for m in METRICS
        ],
        "judges": entries,
        "by_source": _breakdown(sc, sc.gold.source, order, cost, policy),
        "by_category": _breakdown(sc, sc.gold.category, order, cost, policy),
        "not_yet_evaluated": not_yet,
        "paired_differences": paired_differences(
            {j: s.metrics for j, s in points.items()}, boot, order
        ),
        "incomplete": sc.incomplete,
        "refused": list(refused),
        "superseded": list(superseded),
        "definitions": "docs/metrics.md",
        "plots": {
            k: f"plots/{k}.png"
            for k in ("roc", "accuracy_latency", "reliability", "trajectory_outcomes")
        },
    }


PAIRED_METRICS = BREAKDOWN_METRICS
"""Metrics whose paired differences the JSON carries for every pair of ranked judges."""


def paired_differences(
    points: Mapping[str, Mapping[str, float]], boot: Bootstrap, order: Sequence[str]
) -> dict[str, Any]:
    """Every pair (a, b) of ranked judges, a before b in table order: the difference a - b of
    each PAIRED_METRICS point estimate with its paired bootstrap interval (for the Space's
    Compare tab; b - a is the negation). Pure."""
    pairs = []
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            diffs = {}
            for m in PAIRED_METRICS:
                d = points[a][m] - points[b][m]
                diffs[m] = {
                    "value": _r(d),
                    "ci": [_r(v) for v in paired_interval(boot, a, b, m)],
                }
            pairs.append({"a": a, "b": b, "diff": diffs})
    return {"metrics": list(PAIRED_METRICS), "pairs": pairs}
