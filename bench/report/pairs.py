"""The contrast pairs' board: every judge and probe scored pairwise at k* (docs/pairs.md).

Each test pair's two judged points (the ground truth marks them with ``pair``: id, side, clue
kind, distance bucket) give per judge: both right, ranked above and balanced accuracy at k*
(``bench.metrics.pairs``), with intervals from one seeded bootstrap over pairs, overall, per clue
kind, per distance bucket (the foresight-depth curve) and per domain. A judge that reads only one
artefact of the judged action sits at 0.5 here by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench.metrics import pairs as pm
from bench.metrics.inputs import InvalidPolicy, Predictions
from bench.metrics.stats import effective, project, risk_score
from bench.sources.authoring import DISTANCE_BUCKETS

BUCKETS = DISTANCE_BUCKETS
"""Clue-distance buckets in depth order (defined once, by the authoring format)."""


def test_pairs(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every pair whose A and B judged points are both evaluated: id, the two point ids, clue
    kind, bucket and domain; sorted by pair id."""
    sides: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in rows:
        p = r.get("pair")
        if isinstance(p, Mapping):
            sides.setdefault(str(p["id"]), {})[str(p["side"])] = r
    out = []
    for pid, s in sorted(sides.items()):
        if "A" in s and "B" in s:
            a = s["A"]
            out.append(
                {
                    "id": pid,
                    "a": str(a["id"]),
                    "b": str(s["B"]["id"]),
                    "clue_kind": str(a["pair"]["clue_kind"]),
                    "bucket": str(a["pair"]["bucket"]),
                    "domain": str(a.get("category") or ""),
                }
            )
    return out


def pairs_board(
    rows: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    preds: Mapping[str, Predictions],
    policy: InvalidPolicy,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Pair figures of every judge in ``preds`` (aligned to ``ids``, the evaluated row ids)."""
    pairs = test_pairs(rows)
    if not pairs:
        return {"pairs": 0, "judges": {}}
    position = {i: n for n, i in enumerate(ids)}
    a = np.array([position[p["a"]] for p in pairs], dtype=np.int64)
    b = np.array([position[p["b"]] for p in pairs], dtype=np.int64)
    draws = pm.resample(len(pairs), resamples, seed)
    kinds = sorted({p["clue_kind"] for p in pairs})
    domains = sorted({p["domain"] for p in pairs})
    judges: dict[str, Any] = {}
    for j, pred in preds.items():
        act, risk = effective(pred, policy)
        score, _ = risk_score(act, risk)
        o = pm.outcomes(project(act, risk), score, a, b)
        judges[j] = {
            **pm.summary(o, draws),
            "by_clue_kind": pm.by_group(o, [p["clue_kind"] for p in pairs], draws, kinds),
            "by_bucket": pm.by_group(o, [p["bucket"] for p in pairs], draws, BUCKETS),
            "by_domain": pm.by_group(o, [p["domain"] for p in pairs], draws, domains),
        }
    return {
        "pairs": len(pairs),
        "metrics": list(pm.PAIR_METRICS),
        "clue_kinds": kinds,
        "buckets": list(BUCKETS),
        "domains": domains,
        "judges": judges,
    }
