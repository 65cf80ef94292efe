"""Gold labels of one source: its label proposals with every review applied.

``load_gold`` reads ``data/labels/<name>.jsonl`` (the proposals; the sample's are proposed
in-process when the file is absent, so it builds on a fresh clone) and every
``data/reviews/*.jsonl``: a review wins over a proposal, and two conflicting reviews of one
trajectory stop the build with the list of conflicts to adjudicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import DataError
from bench.core.ids import natural_key
from bench.core.labels import GoldLabel
from bench.core.taxonomy import load_taxonomy
from bench.labelling.agreement import Agreement, agreement
from bench.labelling.decisions import LabelRow, decisions_from_rows, load_labels, step_labels
from bench.labelling.proposers import propose_all
from bench.labelling.reviews import Review, effective_decisions, latest, load_reviews
from bench.sources.extraction import SourceData


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
    double_reviewed: Agreement | None = None
    """Agreement between the first two reviewers on double-reviewed items."""
    moved: frozenset[str] = frozenset()
    """Reviewed unsafe trajectories (not disputed) whose onset the review moved from the
    proposal's."""


def load_gold(src: SourceData, labels_dir: Path, reviews_dir: Path) -> GoldSet:
    """Proposals for ``src`` with every review applied (a review wins over a proposal).

    Two conflicting reviews of one trajectory stop the build with the list of conflicts."""
    path = labels_dir / f"{src.name}.jsonl"
    if path.is_file():
        rows = load_labels(path)
    elif not src.upstream:
        # a project corpus's proposer copies its own gold: the rows `python bench/label.py
        # --source <name>` would write
        _, rows = propose_all(src.trajectories, load_taxonomy())
    else:
        raise DataError(
            f"no label proposals for {src.name} at {path}: run `python bench/label.py --source "
            f"{src.name}` first"
        )
    if src.verified:
        # released only after blind verification (the contrast pairs): every label is reviewed
        ids = frozenset(t.id for t in src.trajectories)
        return GoldSet(labels={r.id: r.to_gold(reviewed=True) for r in rows}, reviewed=ids)
    labels = {r.id: r.to_gold() for r in rows}
    review_files = sorted(reviews_dir.glob("*.jsonl")) if reviews_dir.is_dir() else []
    if not review_files:
        return GoldSet(labels=labels)
    return _apply_reviews(src, rows, labels, reviews_dir)


def _apply_reviews(
    src: SourceData, rows: Sequence[LabelRow], labels: Mapping[str, GoldLabel], reviews_dir: Path
) -> GoldSet:
    by_id = {t.id: t for t in src.trajectories}
    proposals = {tid: d for tid, d in decisions_from_rows(rows).items() if tid in by_id}
    reviews = [r for r in load_reviews(reviews_dir) if r.trajectory_id in by_id]
    decisions, conflicts = effective_decisions(proposals, reviews)
    if conflicts:
        lines = [f"  - {c.describe()}" for c in conflicts]
        raise DataError(
            f"{len(conflicts)} conflicting review(s) in {src.name}: reviewers decided the same "
            "trajectory differently. Settle each with `python bench/review.py --adjudicate "
            "TRAJECTORY_ID from=REVIEWER` (or key=value ...), then rebuild:\n" + "\n".join(lines)
        )
    out = dict(labels)
    reviewed: set[str] = set()
    moved: set[str] = set()
    notes: dict[str, str] = {}
    for tid, d in decisions.items():
        if tid not in by_id or not d.reviewed:
            continue
        reviewed.add(tid)
        if d.disputed:
            notes[tid] = d.rationale
        elif d.onset is not None and tid in proposals and proposals[tid].onset != d.onset:
            moved.add(tid)
        for r in step_labels(by_id[tid], d):
            out[r.id] = r.to_gold(reviewed=True)
    return GoldSet(
        labels=out,
        reviewed=frozenset(reviewed),
        disputed=frozenset(notes),
        disputed_notes=dict(sorted(notes.items(), key=lambda kv: natural_key(kv[0]))),
        reviewers=tuple(sorted({r.reviewer for r in reviews})),
        double_reviewed=double_review_agreement(reviews),
        moved=frozenset(moved),
    )


def double_review_agreement(reviews: Sequence[Review]) -> Agreement | None:
    """Agreement between the first two reviewers (by name) of every double-reviewed item."""
    pairs = []
    for per in latest(reviews).values():
        if len(per) >= 2:
            a, b = sorted(per)[:2]
            pairs.append((per[a].values(), per[b].values()))
    return agreement(pairs) if pairs else None
