"""The leaderboard's ground truth: ids and labels only (no upstream text), and its meta file.

``write_ground_truth`` writes ``leaderboards/ground_truth.jsonl`` (``ground_truth_row`` per record,
sorted keys) and ``ground_truth.meta.json`` (per config: source, licence, counts; the lite split's
rule and size), deterministic bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.core.jsonl import write_jsonl, write_text
from bench.core.labels import binary_of
from bench.dataset.records import Built, Record, configs, of_config


def ground_truth_row(r: Record) -> dict[str, Any]:
    """Ids and labels only (no upstream text): the leaderboard's ground truth."""
    p, g = r.point, r.point.gold
    assert g is not None
    return {
        "id": p.id,
        "trajectory_id": p.trajectory_id,
        "source": p.source,
        "config": r.config or p.source,
        "category": p.category,
        "subset": p.subset,
        "level": p.level,
        "split": r.split,
        "k": p.k,
        "act": g.act,
        "binary": binary_of(g.act),
        "onset": g.onset,
        "phase": g.phase,
        "fail": g.fail,
        "harm": g.harm,
        "src": g.src,
        "scored": g.scored,
        "reviewed": g.reviewed,
        "disputed": r.disputed,
        "lite": r.lite,
        **({"twin": r.twin, "twin_similarity": r.twin_similarity} if r.twin else {}),
        **({"pair": dict(r.pair)} if r.pair else {}),
    }


def write_ground_truth(path: Path, built: Built) -> None:
    """Write the ground truth and its meta file, deterministic bytes."""
    records = built.records
    write_jsonl(path, (ground_truth_row(r) for r in records))
    meta = {
        "dataset_version": built.version,
        "configs": {cfg: _config_meta(built, cfg) for cfg in configs(records)},
        "dev_fraction": built.plan.dev_fraction,
        "lite": {
            **dict(built.lite_rule),
            "decision_points": sum(r.lite for r in records),
            "trajectories": len({r.point.trajectory_id for r in records if r.lite}),
        },
        "seed": built.plan.seed,
        # the leaderboard scores the headline sources on reviewed gold only (docs/metrics.md)
        "headline_rows": "reviewed",
        **({"pairs": built.pairs} if built.pairs else {}),
    }
    write_text(meta_path(path), json.dumps(meta, indent=2, sort_keys=True) + "\n")


def _config_meta(built: Built, cfg: str) -> dict[str, Any]:
    """One config's entry in the meta file."""
    mine = of_config(built.records, cfg)
    s = built.source_of(cfg)
    tids = {r.point.trajectory_id for r in mine}
    return {
        "source": s.name,
        "diagnostic": cfg != s.name,
        "upstream": s.upstream,
        "headline": s.headline and cfg == s.name,
        "license": s.license,
        "redistributable": s.redistributable,
        "trajectories": len(tids),
        "decision_points": len(mine),
        "dev_points": sum(r.split == "dev" for r in mine),
        "test_points": sum(r.split == "test" for r in mine),
        "reviewed_trajectories": len(built.gold[s.name].reviewed & tids),
        "disputed_trajectories": len(built.gold[s.name].disputed & tids),
    }


def meta_path(ground_truth: Path) -> Path:
    """``ground_truth.jsonl`` -> ``ground_truth.meta.json``."""
    return ground_truth.with_name(ground_truth.name.removesuffix(".jsonl") + ".meta.json")
