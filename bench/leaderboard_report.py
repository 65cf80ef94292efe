"""The leaderboard as one JSON-able dict (``leaderboard.json``, layout in docs/metrics.md).

``build_report`` is a pure function of the ground-truth rows, the chosen predictions files, the
judges.toml rows and the reward matrix: it scores every complete judge with ``bench.metrics``
(point estimates, trajectory-bootstrap intervals, tie-group ranks), breaks the metrics down by
source and category, and carries the paired differences the Space's Compare tab shows. Every
table and plot is rendered from this dict alone (``bench.leaderboard_tables``, ``bench.plots``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench import metrics as M
from bench.errors import ConfigError, IntegrityError
from bench.jsonl import canonical_json
from bench.leaderboard_inputs import JudgeInfo, PredictionFile
from bench.schema import ACTS
from bench.verdict import ASK_UNSAFE_AT

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


def build_report(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    files: Mapping[str, PredictionFile],
    judges: Mapping[str, JudgeInfo],
    cost: M.CostMatrix,
    *,
    refused: Sequence[Mapping[str, str]] = (),
    superseded: Sequence[Mapping[str, str]] = (),
    rank_metric: str = "balanced_accuracy",
    policy: M.InvalidPolicy = "CONTINUE",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    gt_sha256: str = "",
) -> dict[str, Any]:
    """The whole leaderboard as one JSON-able dict (layout in docs/metrics.md). Pure."""
    if rank_metric not in M.HIGHER_IS_BETTER:
        raise ConfigError(
            f"--metric {rank_metric!r} is not a metric; choose one of {', '.join(M.METRICS)}"
        )
    version = str(meta["dataset_version"])
    known = {str(r["id"]) for r in gt_rows}
    evaluated = [r for r in gt_rows if r.get("split") == "test" and not r.get("disputed")]
    evaluated.sort(key=lambda r: (str(r["trajectory_id"]), int(r["k"])))
    gold = M.Gold.from_rows(evaluated)
    index = M.TrajectoryIndex.of(gold)
    ids = gold.ids.tolist()

    scored: dict[str, M.Predictions] = {}
    rows_of: dict[str, list[Mapping[str, Any]]] = {}
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
        rows = [f.decisions[i] for i in ids]
        rows_of[judge] = rows
        scored[judge] = M.Predictions.from_rows(rows)

    stats = {j: M.judge_stats(gold, p, index, policy) for j, p in scored.items()}
    boot = M.bootstrap_stats(stats, len(index), cost, resamples=resamples, seed=seed)
    points = {j: M.evaluate(gold, p, cost, policy) for j, p in scored.items()}
    ranks = {
        m: M.tie_groups({j: s.metrics[m] for j, s in points.items()}, boot, m) for m in M.METRICS
    }

    judge_entries: list[dict[str, Any]] = []
    for j in scored:
        info = judges.get(j)
        s = points[j]
        rows = rows_of[j]
        warm = np.array([bool(r.get("warmup")) for r in rows])
        p50, p95, nlat = M.latency_percentiles(_col(rows, "latency_s"), warm)
        price_in = info.price_input_per_mtok if info else None
        price_out = info.price_output_per_mtok if info else None
        hardware = sorted(
            {
                h if isinstance(h, str) else canonical_json(h)
                for r in files[j].runs
                if (h := r.get("hardware"))
            }
        )
        judge_entries.append(
            {
                "id": j,
                "display_name": info.display_name if info else j,
                "backend": info.backend if info else "",
                "open_weights": info.open_weights if info else None,
                "in_judges_toml": info is not None,
                "predictions": files[j].rel,
                "config_hash": files[j].config_hash,
                "rank": ranks[rank_metric][j].rank,
                "tie_group": ranks[rank_metric][j].group,
                "ranks": {
                    m: {"rank": ranks[m][j].rank, "tie_group": ranks[m][j].group} for m in M.METRICS
                },
                "metrics": {
                    m: {"value": _r(s.metrics[m]), "ci": [_r(v) for v in boot.interval(j, m)]}
                    for m in M.METRICS
                },
                "counts": dict(s.counts),
                "risk_from_act": _r(s.risk_from_act),
                "taxonomy": {k: {"accuracy": _r(a), "n": n} for k, (a, n) in s.taxonomy.items()},
                "latency": {
                    "p50_s": _r(p50),
                    "p95_s": _r(p95),
                    "n": nlat,
                    "hardware": "; ".join(hardware),
                },
                "cost_per_1000": _r(
                    M.cost_per_thousand(
                        _col(rows, "tokens_in"), _col(rows, "tokens_out"), warm, price_in, price_out
                    )
                ),
                "curves": {
                    "roc": [[_r(a), _r(b)] for a, b in s.roc],
                    "reliability": [
                        {"n": n, "mean_risk": _r(c), "unsafe_share": _r(u)}
                        for n, c, u in s.reliability
                    ],
                },
            }
        )
    sign = 1 if M.HIGHER_IS_BETTER[rank_metric] else -1
    judge_entries.sort(
        key=lambda e: (
            e["rank"],
            e["metrics"][rank_metric]["value"] is None,
            -sign * (e["metrics"][rank_metric]["value"] or 0.0),
            e["id"],
        )
    )

    def breakdown(labels: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, mask in M.group_masks(labels).items():
            g = gold.subset(mask)
            n_traj = len(set(g.trajectory.tolist()))
            entry: dict[str, Any] = {
                "n_steps": int(g.scored.sum()),
                "n_unsafe": int((g.scored & (g.act > 0)).sum()),
                "n_trajectories": n_traj,
                "n_unsafe_trajectories": len(
                    {
                        t
                        for t, o in zip(g.trajectory.tolist(), g.onset.tolist(), strict=True)
                        if o >= 0
                    }
                ),
                "judges": {},
            }
            for e in judge_entries:
                sc = M.evaluate(g, scored[e["id"]].take(mask), cost, policy)
                entry["judges"][e["id"]] = {m: _r(sc.metrics[m]) for m in M.METRICS}
            out[name] = entry
        return out

    not_yet = [
        {
            "id": j,
            "display_name": info.display_name,
            "reason": "no predictions for this dataset version",
        }
        for j, info in sorted(judges.items())
        if j not in files
    ]
    gt_unsafe = int((gold.scored & (gold.act > 0)).sum())
    return {
        "schema": SCHEMA,
        "dataset_version": version,
        "ground_truth": {
            "sha256": gt_sha256,
            "rows": len(gt_rows),
            "evaluated_rows": len(evaluated),
            "steps": int(gold.scored.sum()),
            "unsafe_steps": gt_unsafe,
            "safe_steps": int(gold.scored.sum()) - gt_unsafe,
            "trajectories": len(index),
            "unsafe_trajectories": int((index.onset >= 0).sum()),
            "disputed_excluded": sum(
                1 for r in gt_rows if r.get("split") == "test" and r.get("disputed")
            ),
            "sources": sorted(set(gold.source.tolist())),
        },
        "settings": {
            "rank_metric": rank_metric,
            "invalid_policy": policy,
            "resamples": resamples,
            "seed": seed,
            "confidence": 0.95,
            "ask_unsafe_at": ASK_UNSAFE_AT,
            "risk_from_act": dict(M.RISK_FROM_ACT),
            "ece_bins": M.ECE_BINS,
            "cost_matrix": {
                g: dict(zip(ACTS, row, strict=True))
                for g, row in zip(ACTS, cost.values, strict=True)
            },
        },
        "metrics": [
            {"name": m, "label": LABELS[m], "higher_is_better": M.HIGHER_IS_BETTER[m]}
            for m in M.METRICS
        ],
        "judges": judge_entries,
        "by_source": breakdown(gold.source),
        "by_category": breakdown(gold.category),
        "not_yet_evaluated": not_yet,
        "paired_differences": paired_differences(
            {j: s.metrics for j, s in points.items()}, boot, [e["id"] for e in judge_entries]
        ),
        "incomplete": incomplete,
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
    points: Mapping[str, Mapping[str, float]], boot: M.Bootstrap, order: Sequence[str]
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
                    "ci": [_r(v) for v in M.paired_interval(boot, a, b, m)],
                }
            pairs.append({"a": a, "b": b, "diff": diffs})
    return {"metrics": list(PAIRED_METRICS), "pairs": pairs}
