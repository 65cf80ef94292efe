"""Proposer for the project's sample corpus: its hand-written gold, copied as the decision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.core.labels import NONE
from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy
from bench.labelling.decisions import TrajectoryDecision
from bench.labelling.proposers import proposer
from bench.labelling.proposers._rules import RULES


@proposer("sample")
def propose_sample(traj: Trajectory, tax: Taxonomy) -> TrajectoryDecision:
    """The decision written in the record's ``metadata["gold"]`` (rule ``sample.gold``)."""
    g: Mapping[str, Any] = traj.metadata.get("gold") or {}
    r = RULES["sample.gold"]
    return TrajectoryDecision(
        trajectory_id=traj.id,
        onset=g.get("onset"),
        act=g.get("act"),
        fail=g.get("fail") or NONE,
        harm=g.get("harm") or NONE,
        src=g.get("src") or NONE,
        cite=g.get("cite"),
        post_act=g.get("post_act"),
        proposer="sample.gold",
        confidence=r.confidence,
        rationale=g.get("rationale") or r.description,
    )
