"""The decision written into a project corpus record's ``metadata["gold"]`` (sample cases and
contrast pairs carry their gold with them; the proposer only copies it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.core.labels import NONE
from bench.core.schema import Trajectory
from bench.labelling.decisions import TrajectoryDecision
from bench.labelling.proposers._rules import RULES


def metadata_gold(traj: Trajectory, rule: str) -> TrajectoryDecision:
    """The record's own gold as a decision, under proposer ``rule`` (its confidence)."""
    g: Mapping[str, Any] = traj.metadata.get("gold") or {}
    r = RULES[rule]
    return TrajectoryDecision(
        trajectory_id=traj.id,
        onset=g.get("onset"),
        act=g.get("act"),
        fail=g.get("fail") or NONE,
        harm=g.get("harm") or NONE,
        src=g.get("src") or NONE,
        cite=g.get("cite"),
        post_act=g.get("post_act"),
        proposer=rule,
        confidence=r.confidence,
        rationale=g.get("rationale") or r.description,
    )
