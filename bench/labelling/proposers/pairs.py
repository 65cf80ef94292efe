"""Proposer for the contrast pairs: the gold each pair file states (A: the act at k*, B: safe),
computed by the authoring format and confirmed by blind verification, copied as the decision."""

from __future__ import annotations

from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy
from bench.labelling.decisions import TrajectoryDecision
from bench.labelling.proposers import proposer
from bench.labelling.proposers._gold import metadata_gold


@proposer("pairs")
def propose_pairs(traj: Trajectory, tax: Taxonomy) -> TrajectoryDecision:
    """The decision written in the record's ``metadata["gold"]`` (rule ``pairs.gold``)."""
    return metadata_gold(traj, "pairs.gold")
