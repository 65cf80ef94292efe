"""Gold labels: a source's extracted trajectories, its label proposals with every review applied,
and the checks a build runs on them before anything is written.

Loading: ``load_source`` (``work/extract/<name>/trajectories.jsonl``; the sample is extracted
in-process when missing) and ``load_gold`` (``data/labels/<name>.jsonl`` plus
``data/reviews/*.jsonl``: a review wins over a proposal, two conflicting reviews stop the build).
Checks: ``validate`` (ids line up, values in vocabulary, one onset per unsafe trajectory, no view
leaks its own result) and ``render_checks`` (the judged action verbatim in every template's prompt
at the default budget). Every check returns its problems as lines; the caller decides to stop.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.errors import DataError
from bench.jsonl import read_jsonl
from bench.paths import REPO_ROOT
from bench.schema import (
    ACTS,
    DecisionPoint,
    GoldLabel,
    Trajectory,
    TrajectoryLabel,
    decision_points,
)

log = logging.getLogger(__name__)

PHASES = ("safe", "pre", "onset", "post")
"""A step's gold phase, in trajectory order (``safe`` when the trajectory has no onset)."""

LEAK_MIN_CHARS = 40
"""Shortest observation the leak check looks for in its own step's thought: shorter results are
often anticipated in the thought in so many words (StepShield: the thought "Backup completed;
restore must be validated." before a status command that prints "Backup completed"), which is the
agent's expectation, not a leaked result."""


@dataclass(frozen=True)
class SourceData:
    """One source's trajectories and what may be done with them."""

    name: str
    """Adapter name (= config name)."""
    license: str
    """Licence id; 'none' = not redistributable."""
    redistributable: bool
    """False when the data may only be evaluated locally."""
    trajectories: tuple[Trajectory, ...]
    """Extracted trajectories, in a stable order."""


@dataclass(frozen=True)
class GoldSet:
    """Gold labels of one source after reviews were applied."""

    labels: Mapping[str, GoldLabel]
    """Decision point id -> gold label."""
    reviewed: frozenset[str] = frozenset()
    """Trajectory ids a review decided."""
    disputed: frozenset[str] = frozenset()
    """Trajectory ids whose upstream label a reviewer disputed."""
    disputed_notes: Mapping[str, str] = field(default_factory=dict)
    """Disputed trajectory id -> the deciding reviewer's note (the project's own words)."""
    reviewers: tuple[str, ...] = ()
    """Names of everyone whose review or adjudication touched this source."""
    double_reviewed: Any = None
    """bench.reviews.Agreement between the first two reviewers on double-reviewed items."""


@dataclass(frozen=True)
class Truncation:
    """Default-budget render figures for one source and template."""

    total: int = 0
    """Prompts rendered."""
    elided: int = 0
    """Prompts that elided history."""
    over_budget: int = 0
    """Prompts over budget even with every history turn elided."""


# ---------------------------------------------------------------------------------------------
# loading


def natural_key(s: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``rjudge:2`` before ``rjudge:10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", s) if p)


def load_source(name: str, work: Path, raw_path: Path | None = None) -> SourceData:
    """A source's extracted trajectories from ``work/extract/<name>/trajectories.jsonl``; the
    sample is extracted in-process when that file is missing."""
    from bench import sources

    adapter = sources.get(name)
    path = work / "extract" / name / "trajectories.jsonl"
    if path.is_file():
        trajs = [Trajectory.from_dict(d) for d in read_jsonl(path)]
    elif name == "sample":
        result = adapter.extract(raw_path or adapter.default_path(REPO_ROOT))
        if result.rejects:
            raise DataError(
                f"the sample corpus has {len(result.rejects)} malformed line(s) (first: "
                f"{result.rejects[0].reason}); run `python bench/extract.py --source sample`"
            )
        trajs = result.trajectories
    else:
        raise DataError(
            f"no extracted trajectories for {name} at {path}: run "
            f"`python bench/extract.py --source {name}` first (FORESIGHT_DATA names the raw data)"
        )
    trajs.sort(key=lambda t: natural_key(t.id))
    return SourceData(
        name=name,
        license=adapter.license,
        redistributable=adapter.redistributable,
        trajectories=tuple(trajs),
    )


def _sample_proposals(src: SourceData) -> list[Any]:
    """Label rows for the sample from its proposer (its hand-written gold), as `python
    bench/label.py --source sample` would write them; used when data/labels/sample.jsonl is
    absent so the sample builds on a fresh clone."""
    from bench.label import label_trajectories
    from bench.labels import load_taxonomy

    _, rows = label_trajectories(src.trajectories, load_taxonomy())
    return rows


def load_gold(src: SourceData, labels_dir: Path, reviews_dir: Path) -> GoldSet:
    """Proposals for ``src`` with every review applied (a review wins over a proposal).

    Two conflicting reviews of one trajectory stop the build with the list of conflicts."""
    from bench.labels import load_labels

    path = labels_dir / f"{src.name}.jsonl"
    if path.is_file():
        rows = load_labels(path)
    elif src.name == "sample":
        rows = _sample_proposals(src)
    else:
        raise DataError(
            f"no label proposals for {src.name} at {path}: run `python bench/label.py --source "
            f"{src.name}` first"
        )
    labels = {r.id: r.to_gold() for r in rows}
    review_files = sorted(reviews_dir.glob("*.jsonl")) if reviews_dir.is_dir() else []
    if not review_files:
        return GoldSet(labels=labels)
    return _apply_reviews(src, rows, labels, reviews_dir)


def _apply_reviews(
    src: SourceData, rows: list[Any], labels: dict[str, GoldLabel], reviews_dir: Path
) -> GoldSet:
    from bench.labels import decisions_from_rows, step_labels

    try:
        from bench.reviews import effective_decisions, load_reviews
    except ImportError as e:
        raise DataError(
            f"reviews exist in {reviews_dir} but bench/reviews.py is missing ({e}); update the "
            "checkout"
        ) from e
    by_id = {t.id: t for t in src.trajectories}
    proposals = {tid: d for tid, d in decisions_from_rows(rows).items() if tid in by_id}
    reviews = [r for r in load_reviews(reviews_dir) if _get(r, "trajectory_id") in by_id]
    decisions, conflicts = effective_decisions(proposals, reviews)
    if conflicts:
        lines = [f"  - {_describe(c)}" for c in conflicts]
        raise DataError(
            f"{len(conflicts)} conflicting review(s) in {src.name}: reviewers decided the same "
            "trajectory differently. Settle each with `python bench/review.py --adjudicate "
            "TRAJECTORY_ID from=REVIEWER` (or key=value ...), then rebuild:\n" + "\n".join(lines)
        )
    out = dict(labels)
    reviewed: set[str] = set()
    notes: dict[str, str] = {}
    for tid, d in decisions.items():
        if tid not in by_id or not d.reviewed:
            continue
        reviewed.add(tid)
        if d.disputed:
            notes[tid] = d.rationale
        for r in step_labels(by_id[tid], d):
            out[r.id] = r.to_gold(reviewed=True)
    return GoldSet(
        labels=out,
        reviewed=frozenset(reviewed),
        disputed=frozenset(notes),
        disputed_notes=dict(sorted(notes.items(), key=lambda kv: natural_key(kv[0]))),
        reviewers=tuple(sorted({str(_get(r, "reviewer")) for r in reviews})),
        double_reviewed=_double_review_agreement(reviews),
    )


def _double_review_agreement(reviews: Sequence[Any]) -> Any:
    """Agreement between the first two reviewers (by name) of every double-reviewed item."""
    from bench.reviews import agreement, latest

    pairs = []
    for per in latest(reviews).values():
        if len(per) >= 2:
            a, b = sorted(per)[:2]
            pairs.append((per[a].values(), per[b].values()))
    return agreement(pairs) if pairs else None


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _describe(c: Any) -> str:
    describe = getattr(c, "describe", None)
    return describe() if callable(describe) else str(c)


# ---------------------------------------------------------------------------------------------
# validation


def trajectory_label(traj_id: str, points: Sequence[DecisionPoint]) -> TrajectoryLabel:
    """Gold trajectory label: unsafe when any of its steps has an onset."""
    return "unsafe" if any(p.gold and p.gold.onset is not None for p in points) else "safe"


def validate(src: SourceData, gold: GoldSet, vocab: Any) -> tuple[list[DecisionPoint], list[str]]:
    """Attach gold labels and check them; returns (points with gold, problems).

    Checks: every label id is a decision point and vice versa; act/phase/taxonomy values in
    the vocabulary and cite within the visible history; an unsafe trajectory has exactly one
    onset step and its other steps agree (pre before, post after); its upstream label agrees
    unless a reviewer disputed it; no decision point's thought or action carries its own
    observation, and its history is exactly the turns before it."""
    problems: list[str] = []
    points: list[DecisionPoint] = []
    seen: set[str] = set()
    allowed = {"fail": vocab.fail, "harm": vocab.harm, "src": vocab.src}
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
    from bench.render import action_text, render

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
