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
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from bench.metrics.bootstrap import macro, percentile_interval, tie_groups
from bench.report import shortcuts
from bench.report.inputs import PredictionFile
from bench.report.scoring import Headline, Scored, Settings, cell, headline, rnd, score


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired sequences (None with fewer than two pairs or no variation)."""
    if len(a) < 2:
        return None
    tau = kendalltau(a, b).statistic  # variant "b": ties counted
    return None if np.isnan(tau) else float(tau)


def lite_board(
    gt_rows: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    version: str,
    files: Mapping[str, PredictionFile],
    settings: Settings,
    full: Scored,
    full_head: Headline,
    ranked: Sequence[str],
    role: Mapping[str, str],
    rank_metric: str,
    names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The report's ``lite`` section (``rows``: the evaluated headline rows)."""
    lite_rows = [r for r in rows if r.get("lite")]
    if not lite_rows:
        return {"decision_points": 0, "judges": [], "agreement": None}
    sc = score(gt_rows, lite_rows, version, files, settings)
    sources = [s for s in full_head.sources if s in set(sc.traj_source.tolist())]
    h = headline(sc, sources) if sources else None
    judges = [j for j in sc.preds if role.get(j, "judge") != "probe"]
    probes = sorted(j for j in sc.preds if role.get(j, "judge") == "probe")
    refs = shortcuts.references(h, probes) if h is not None else {}
    entries: list[dict[str, Any]] = []
    if h is not None:
        ranks = tie_groups({j: h.point[j][rank_metric] for j in judges}, h.boot, rank_metric)
        for j in judges:
            entries.append(
                {
                    "id": j,
                    "display_name": (names or {}).get(j, j),
                    "rank": ranks[j].rank,
                    "tie_group": ranks[j].group,
                    "lite_only": j not in full.preds,
                    "predictions": files[j].rel,
                    "metrics": {
                        m: cell(h.point[j][m], h.boot.samples[j][m])
                        for m in ("balanced_accuracy", "auroc", "caught_balanced", rank_metric)
                    },
                    "parse_rate": rnd(sc.points[j].metrics["parse_rate"]),
                    "counts": dict(sc.points[j].counts),
                    "above_shortcuts": shortcuts.margins(h, refs, j) if refs else {},
                }
            )
        entries.sort(
            key=lambda e: (e["rank"], -(e["metrics"][rank_metric]["value"] or 0.0), e["id"])
        )
    # agreement: the judges on both boards, lite figures on the full board's own draws
    both = [j for j in ranked if j in sc.preds]
    lite_traj = full.traj_mask(np.array([bool(r.get("lite")) for r in rows], dtype=bool))
    per: dict[str, Any] = {}
    tau = None
    if both and full_head.sources:
        boots = [full.boot((full.traj_source == s) & lite_traj) for s in full_head.sources]
        lite_macro = macro(boots)
        points = {
            j: float(np.mean([full.point(j, (full.traj_source == s) & lite_traj)[rank_metric]
                              for s in full_head.sources]))
            for j in both
        }  # fmt: skip
        for j in both:
            d = lite_macro.samples[j][rank_metric] - full_head.boot.samples[j][rank_metric]
            lo, hi = percentile_interval(d, 0.025)
            per[j] = {
                "full": rnd(full_head.point[j][rank_metric]),
                "lite": rnd(points[j]),
                "difference": {
                    "value": rnd(points[j] - full_head.point[j][rank_metric]),
                    "ci": [rnd(lo), rnd(hi)],
                },
            }
        tau = kendall_tau(
            [full_head.point[j][rank_metric] for j in both], [points[j] for j in both]
        )
    return {
        "decision_points": len(lite_rows),
        "trajectories": len(sc.index),
        "by_source": {
            s: int((sc.gold.source == s).sum()) for s in sorted(set(sc.gold.source.tolist()))
        },
        "full_decision_points": len(rows),
        "rank_metric": rank_metric,
        "judges": entries,
        "shortcut_reference": shortcuts.reference_json(refs, h.boot) if refs and h else {},
        "agreement": {
            "judges": len(both),
            "kendall_tau": rnd(tau),
            "per_judge": per,
        },
        "not_scored": sorted(i["id"] for i in sc.incomplete),
    }
