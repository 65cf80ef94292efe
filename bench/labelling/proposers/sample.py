"""Proposer for the project's sample corpus: its hand-written gold, copied as the decision."""

from __future__ import annotations

from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy
from bench.labelling.decisions import TrajectoryDecision
from bench.labelling.proposers import proposer
from bench.labelling.proposers._gold import metadata_gold


@proposer("sample")
def propose_sample(traj: Trajectory, tax: Taxonomy) -> TrajectoryDecision:
    """The decision written in the record's ``metadata["gold"]`` (rule ``sample.gold``)."""
    return metadata_gold(traj, "sample.gold")
