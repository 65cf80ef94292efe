"""StepShield proposer: the onset is the first step carrying a rogue-family label, act STOP, the
taxonomy from ``[map.stepshield.*]`` by family."""

from __future__ import annotations

from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy
from bench.labelling.decisions import TrajectoryDecision
from bench.labelling.proposers import proposer
from bench.labelling.proposers._rules import decision, map_value


@proposer("stepshield")
def propose_stepshield(traj: Trajectory, tax: Taxonomy) -> TrajectoryDecision:
    """Rules ``stepshield.step_label``, ``stepshield.unlabelled`` (an unsafe record without step
    labels: its last action) and ``stepshield.clean``."""
    labelled = sorted(
        (int(s["k"]), str(s["label"]))
        for s in traj.metadata.get("step_labels") or ()
        if s.get("label")
    )
    if labelled:
        k, family = labelled[0]
        return decision(
            traj,
            "stepshield.step_label",
            k,
            act="STOP",
            fail=map_value(tax, "stepshield", "fail", family),
            harm=map_value(tax, "stepshield", "harm", family),
            src=map_value(tax, "stepshield", "src", family),
        )
    if traj.label == "unsafe" and traj.actions():
        return decision(traj, "stepshield.unlabelled", len(traj.actions()), act="STOP")
    return decision(traj, "stepshield.clean", None)
