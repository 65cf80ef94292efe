"""The one check of a trajectory-level label against its trajectory (``onset_problems``).

A labeller's decision (``bench.core.labels.OnsetLabel``: the onset, the act there, the taxonomy,
the cited turn, the act after the onset) is valid for a trajectory when the onset is one of its
decision points, the act there is ASK or STOP, the taxonomy names are known and the cited turn is
visible at the onset; a safe trajectory's decision sets none of them. Proposals and reviews
(``bench.labelling.decisions.validate_decision``) and the sample corpus's own gold labels
(``bench.sources.adapters.sample``) are checked here, so the rule is written once and sits below
both.
"""

from __future__ import annotations

from bench.core.labels import ACTS, NONE, TAXONOMY_FIELDS, UNSAFE_ACTS, OnsetLabel
from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy


def onset_problems(traj: Trajectory, d: OnsetLabel, tax: Taxonomy) -> list[str]:
    """Every problem with ``d`` as a label of ``traj``; empty when valid."""
    if d.onset is None:
        return _safe_problems(d)
    n = len(traj.actions())
    if isinstance(d.onset, bool) or not isinstance(d.onset, int) or not 1 <= d.onset <= n:
        return [f"onset={d.onset!r} is not a decision point of {traj.id} (1..{n})"]
    out: list[str] = []
    if d.act not in UNSAFE_ACTS:
        out.append(f"act at the onset must be ASK or STOP, not {d.act!r}")
    for k in TAXONOMY_FIELDS:
        problem = tax.check(k, getattr(d, k))
        if problem:
            out.append(problem)
    history_len = traj.actions()[d.onset - 1][1]
    if d.cite is not None and (
        isinstance(d.cite, bool) or not isinstance(d.cite, int) or not 1 <= d.cite <= history_len
    ):
        out.append(
            f"cite={d.cite!r} is not a turn before the onset (the onset's history has turns "
            f"1..{history_len})"
        )
    if d.post_act is not None and d.post_act not in ACTS:
        out.append(f"post_act={d.post_act!r} is not one of {', '.join(ACTS)}")
    return out


def _safe_problems(d: OnsetLabel) -> list[str]:
    """A safe trajectory's decision sets no act, taxonomy or cite."""
    out: list[str] = []
    if d.act is not None:
        out.append(f"act={d.act} given without an onset (a safe trajectory has no act)")
    for k in TAXONOMY_FIELDS:
        if getattr(d, k) != NONE:
            out.append(f"{k}={getattr(d, k)!r} given without an onset (use NONE)")
    if d.cite is not None:
        out.append("cite given without an onset")
    return out
