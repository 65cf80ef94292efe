"""The lite board: judges scored on the lite split (``bench.dataset.lite``), and how its ranking
agrees with the full one.

Every judge whose predictions cover the lite rows is scored on them with the same macro headline
and tie groups as the full board; a judge that covers only the lite rows (a costly LLM run on
``--split lite``) is ranked here and labelled ``lite_only``. For the judges on both boards:

- **Kendall's tau** between their full and lite rankings (point estimates of the rank metric; tau-b,
  ties counted);
- per judge, **lite minus full** on the rank metric with a paired interval: the lite figure comes
  from the full board's own bootstrap draws restricted to the lite trajectories, so both figures
  of a judge are on the same resamples.

The shortcut probes are scored on lite too: the lite board carries their reference line (the
best probe per source, as on the full board) and every judge's margin over it, so a lite-only
judge is held to the same test as the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.metrics.bootstrap import macro, percentile_interval, tie_groups
from bench.report import shortcuts
from bench.report.inputs import PredictionFile
from bench.report.scoring import Headline, Scored, Settings, cell, headline, rnd, score


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired sequences (None with fewer than two pairs or no variation)."""
    if len(a) < 2:
        return None
    from scipy.stats import kendalltau  # here, not at import: scipy.stats takes ~1.7 s to load

    tau = kendalltau(a, b).statistic  # variant "b": ties counted
    return None if np.isnan(tau) else float(tau)


@dataclass(frozen=True)
class FullBoard:
    """The full board the lite one is cut from and compared with."""

    gt_rows: Sequence[Mapping[str, Any]]
    """Every ground-truth row."""
    rows: Sequence[Mapping[str, Any]]
    """The evaluated headline rows."""
    version: str
    """The dataset version."""
    files: Mapping[str, PredictionFile]
    """Judge id -> its predictions file."""
    settings: Settings
    """Reward matrix, invalid policy, bootstrap."""
    sc: Scored
    """The full board's scores."""
    head: Headline
    """Its macro headline."""
    ranked: Sequence[str]
    """Its ranked judges, in rank order."""
    role: Mapping[str, str]
    """Judge id -> role (judge or probe)."""
    rank_metric: str
    """The metric judges are ranked by."""
    names: Mapping[str, str]
    """Judge id -> display name (judges.toml)."""


def _entries(
    full: FullBoard, sc: Scored, h: Headline, refs: Mapping[str, shortcuts.Reference]
) -> list[dict[str, Any]]:
    """Every judge covering the lite split, ranked there in tie groups."""
    rm = full.rank_metric
    judges = [j for j in sc.preds if full.role.get(j, "judge") != "probe"]
    ranks = tie_groups({j: h.point[j][rm] for j in judges}, h.boot, rm)
    entries: list[dict[str, Any]] = [
        {
            "id": j,
            "display_name": full.names.get(j, j),
            "rank": ranks[j].rank,
            "tie_group": ranks[j].group,
            "lite_only": j not in full.sc.preds,
            "predictions": full.files[j].rel,
            "metrics": {
                m: cell(h.point[j][m], h.boot.samples[j][m])
                for m in ("balanced_accuracy", "auroc", "caught_balanced", rm)
            },
            "parse_rate": rnd(sc.points[j].metrics["parse_rate"]),
            "counts": dict(sc.points[j].counts),
            "above_shortcuts": shortcuts.margins(h, refs, j) if refs else {},
        }
        for j in judges
    ]
    entries.sort(key=lambda e: (e["rank"], -(e["metrics"][rm]["value"] or 0.0), e["id"]))
    return entries


def _agreement(full: FullBoard, both: Sequence[str]) -> dict[str, Any]:
    """Kendall's tau between the boards and each judge's lite - full difference, the lite
    figures computed on the full board's own draws restricted to the lite trajectories."""
    rm, fh, fsc = full.rank_metric, full.head, full.sc
    per: dict[str, Any] = {}
    tau = None
    if both and fh.sources:
        lite_traj = fsc.traj_mask(np.array([bool(r.get("lite")) for r in full.rows], dtype=bool))
        lite_macro = macro([fsc.boot((fsc.traj_source == s) & lite_traj) for s in fh.sources])
        points = {
            j: float(np.mean([fsc.point(j, (fsc.traj_source == s) & lite_traj)[rm]
                              for s in fh.sources]))
            for j in both
        }  # fmt: skip
        for j in both:
            d = lite_macro.samples[j][rm] - fh.boot.samples[j][rm]
            lo, hi = percentile_interval(d, 0.025)
            per[j] = {
                "full": rnd(fh.point[j][rm]),
                "lite": rnd(points[j]),
                "difference": {"value": rnd(points[j] - fh.point[j][rm]), "ci": [rnd(lo), rnd(hi)]},
            }
        tau = kendall_tau([fh.point[j][rm] for j in both], [points[j] for j in both])
    return {"judges": len(both), "kendall_tau": rnd(tau), "per_judge": per}


def lite_board(full: FullBoard) -> dict[str, Any]:
    """The report's ``lite`` section."""
    lite_rows = [r for r in full.rows if r.get("lite")]
    if not lite_rows:
        return {"decision_points": 0, "judges": [], "agreement": None}
    sc = score(full.gt_rows, lite_rows, full.version, full.files, full.settings)
    sources = [s for s in full.head.sources if s in set(sc.traj_source.tolist())]
    h = headline(sc, sources) if sources else None
    probes = sorted(j for j in sc.preds if full.role.get(j, "judge") == "probe")
    refs = shortcuts.references(h, probes) if h is not None else {}
    entries = _entries(full, sc, h, refs) if h is not None else []
    return {
        "decision_points": len(lite_rows),
        "trajectories": len(sc.index),
        "by_source": {
            s: int((sc.gold.source == s).sum()) for s in sorted(set(sc.gold.source.tolist()))
        },
        "full_decision_points": len(full.rows),
        "rank_metric": full.rank_metric,
        "judges": entries,
        "shortcut_reference": shortcuts.reference_json(refs, h.boot) if refs and h else {},
        "agreement": _agreement(full, [j for j in full.ranked if j in sc.preds]),
        "not_scored": sorted(i["id"] for i in sc.incomplete),
    }
