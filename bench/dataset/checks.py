"""The checks a build runs on gold labels before anything is written.

``validate`` attaches gold labels to a source's decision points and checks them: every label id
is a decision point and vice versa; values are in the vocabulary and ``cite`` within the visible
history; an unsafe trajectory has exactly one onset step and its other steps agree; the upstream
label agrees unless a reviewer disputed it; no decision point's thought or action carries its own
observation. ``render_checks`` renders every point with every template at the default budget and
checks that the judged action appears verbatim in every prompt. Every check returns its problems
as lines; the caller decides to stop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bench.core.ids import natural_key
from bench.core.labels import ACTS, PHASES, GoldLabel
from bench.core.schema import DecisionPoint, Trajectory, TrajectoryLabel, decision_points
from bench.core.taxonomy import Taxonomy
from bench.labelling.gold import GoldSet
from bench.prompts.renderer import action_text, render
from bench.sources.extraction import SourceData

LEAK_MIN_CHARS = 40
"""Shortest observation the leak check looks for in its own step's thought: shorter results are
often anticipated in the thought in so many words (StepShield: the thought "Backup completed;
restore must be validated." before a status command that prints "Backup completed"), which is the
agent's expectation, not a leaked result."""


@dataclass(frozen=True)
class Truncation:
    """Default-budget render figures for one source and template."""

    total: int = 0
    """Prompts rendered."""
    elided: int = 0
    """Prompts that elided history."""
    over_budget: int = 0
    """Prompts over budget even with every history turn elided."""


def trajectory_label(traj_id: str, points: Sequence[DecisionPoint]) -> TrajectoryLabel:
    """Gold trajectory label: unsafe when any of its steps has an onset."""
    return "unsafe" if any(p.gold and p.gold.onset is not None for p in points) else "safe"


def validate(
    src: SourceData, gold: GoldSet, vocab: Taxonomy
) -> tuple[list[DecisionPoint], list[str]]:
    """Attach gold labels and check them; returns (points with gold, problems).

    Checks: every label id is a decision point and vice versa; act/phase/taxonomy values in
    the vocabulary and cite within the visible history; an unsafe trajectory has exactly one
    onset step and its other steps agree (pre before, post after); its upstream label agrees
    unless a reviewer disputed it; no decision point's thought or action carries its own
    observation, and its history is exactly the turns before it."""
    problems: list[str] = []
    points: list[DecisionPoint] = []
    seen: set[str] = set()
    allowed = {k: frozenset(vocab.names(k)) for k in ("fail", "harm", "src")}
    for t in src.trajectories:
        tps: list[DecisionPoint] = []
        for (_, i), dp in zip(t.actions(), decision_points(t), strict=True):
            seen.add(dp.id)
            g = gold.labels.get(dp.id)
            if g is None:
                problems.append(
                    f"{dp.id}: no label (run `python bench/label.py --source {src.name}`)"
                )
                continue
            problems += [f"{dp.id}: {p}" for p in _check_values(g, len(dp.history), allowed)]
            problems += [f"{dp.id}: {p}" for p in _check_leak(t, i, dp)]
            tps.append(replace(dp, gold=g))
        problems += _check_onset(t, tps, t.id in gold.disputed)
        points += tps
    for lid in sorted(set(gold.labels) - seen, key=natural_key):
        problems.append(
            f"{lid}: labelled but not a decision point of the extracted {src.name} data"
        )
    return points, problems


def _check_values(g: GoldLabel, n_history: int, allowed: Mapping[str, frozenset[str]]) -> list[str]:
    out = []
    if g.act not in ACTS:
        out.append(f"act {g.act!r} is not one of {', '.join(ACTS)}")
    if g.phase not in PHASES:
        out.append(f"phase {g.phase!r} is not one of {', '.join(PHASES)}")
    for name, names in allowed.items():
        value = getattr(g, name)
        if value != "NONE" and value not in names:
            out.append(f"{name} {value!r} is not in data/taxonomy.toml [{name}]")
    if g.cite is not None and not (isinstance(g.cite, int) and 1 <= g.cite <= n_history):
        out.append(f"cite {g.cite!r} is not a visible earlier turn (1..{n_history})")
    return out


def _check_leak(t: Trajectory, i: int, dp: DecisionPoint) -> list[str]:
    if dp.history != t.turns[:i]:
        return ["the view's history is not exactly the turns before the action"]
    obs = (t.turns[i].observation or "").strip()
    if len(obs) < LEAK_MIN_CHARS:
        return []
    # A result the action itself spells out (`echo "tests failed"`, a file write) is not a leak,
    # nor is one already visible earlier; text found only in the step's own thought is (the
    # ASSEBench pattern "[Observation]: ..." written into the thought).
    earlier = "\n".join(
        x for turn in dp.history for x in (turn.content, turn.thought, turn.observation) if x
    )
    if obs in (dp.thought or "") and obs not in dp.action.text and obs not in earlier:
        return ["the judged step's thought contains its own observation"]
    return []


def _check_onset(t: Trajectory, tps: Sequence[DecisionPoint], disputed: bool) -> list[str]:
    if not tps:
        return []
    golds = [p.gold for p in tps if p.gold is not None]
    onsets = {g.onset for g in golds}
    onset_steps = [p.k for p in tps if p.gold and p.gold.phase == "onset"]
    out: list[str] = []
    if onsets == {None}:
        if any(g.phase != "safe" for g in golds):
            out.append(f"{t.id}: steps without an onset must have phase 'safe'")
        if t.label == "unsafe" and not disputed:
            out.append(
                f"{t.id}: upstream label is unsafe but no onset is labelled (set one, or record a "
                "dispute with `python bench/review.py`)"
            )
        return out
    if len(onsets) != 1 or len(onset_steps) != 1:
        return [
            f"{t.id}: an unsafe trajectory needs exactly one onset step (found {onset_steps or 'none'}, onsets {sorted(o for o in onsets if o is not None)})"
        ]
    onset = onset_steps[0]
    if onsets != {onset}:
        out.append(
            f"{t.id}: onset field {sorted(onsets, key=str)} does not match the onset step {onset}"
        )
    for p in tps:
        assert p.gold is not None
        want = "pre" if p.k < onset else "onset" if p.k == onset else "post"
        if p.gold.phase != want:
            out.append(f"{p.id}: phase {p.gold.phase!r}, expected {want!r} (onset {onset})")
    if t.label == "safe" and not disputed:
        out.append(
            f"{t.id}: upstream label is safe but an onset is labelled (record a dispute with "
            "`python bench/review.py`)"
        )
    return out


def render_checks(
    points: Sequence[DecisionPoint], templates: Sequence[str]
) -> tuple[
    dict[str, tuple[dict[str, str], ...]],
    dict[str, tuple[int, bool]],
    dict[str, Truncation],
    list[str],
]:
    """Render every point with every template at the default budget; returns (auditor messages
    per id, auditor (elided, over) per id, truncation per template, problems). A prompt that does
    not contain the judged action verbatim is a problem."""
    auditor: dict[str, tuple[dict[str, str], ...]] = {}
    auditor_trunc: dict[str, tuple[int, bool]] = {}
    counts: dict[str, Counter[str]] = {name: Counter() for name in templates}
    problems: list[str] = []
    for dp in points:
        needle = action_text(dp)
        for name in templates:
            prompt = render(dp, name)
            c = counts[name]
            c["total"] += 1
            c["elided"] += prompt.elided_turns > 0
            c["over"] += prompt.over_budget
            if not any(needle in m["content"] for m in prompt.messages):
                problems.append(f"{dp.id}: template {name!r} lost the judged action")
            if name == "auditor":
                auditor[dp.id] = prompt.messages
                auditor_trunc[dp.id] = (prompt.elided_turns, prompt.over_budget)
    trunc = {n: Truncation(c["total"], c["elided"], c["over"]) for n, c in counts.items()}
    return auditor, auditor_trunc, trunc, problems
