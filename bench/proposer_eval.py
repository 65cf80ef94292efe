"""``python bench/proposer_eval.py``: how close the rule-based proposals come to reviewed decisions.

Compares each proposal (run live from the extracted trajectories, or read from a label folder
with ``--labels``) with the reviewed decision of the same trajectory and prints, per source and
per proposer rule: n, onset exact accuracy, onsets too early / too late, act at the onset,
fail / harm / src / cite at the onset, the act after the onset (``post``) and the share of scored
steps whose act matches (``steps``). Disputed trajectories and open conflicts are left out.

The reference is ``bench.reviews.effective_decisions`` over the chosen reviewers' reviews
(``--reviewers``, default all): an adjudication wins, agreeing reviews count, reviews that
disagree are a conflict and skipped. ``--reviewers agent-rev-c`` scores only the items those
reviewers reviewed, which is how a held-out check is made (develop on some reviewers' items,
report on another's). ``--errors`` lists every mismatch (ids and labels only).
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/proposer_eval.py`: the repo root first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import logging  # noqa: E402
from collections import defaultdict  # noqa: E402
from collections.abc import Iterable, Mapping, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

from bench._script import run  # noqa: E402
from bench.errors import DataError  # noqa: E402
from bench.labels import (  # noqa: E402
    DEFAULT_POST_ACT,
    TrajectoryDecision,
    load_labels,
    load_taxonomy,
    natural_key,
)
from bench.paths import REPO_ROOT, work_dir  # noqa: E402
from bench.reviews import Review, effective_decisions, load_reviews, source_of  # noqa: E402

log = logging.getLogger(__name__)

REVIEWS_DIR = REPO_ROOT / "data" / "reviews"
"""Committed reviews."""

FIELDS = ("act", "fail", "harm", "src", "cite", "post")
"""Per-item label fields compared besides the onset."""


@dataclass(frozen=True)
class Item:
    """One proposal compared with its reference decision."""

    trajectory_id: str
    """The trajectory."""
    rule: str
    """The proposer rule that made the proposal."""
    onset: str
    """exact, early (proposed before the reference), late, or flip (safe vs unsafe)."""
    match: Mapping[str, bool]
    """Field name (``FIELDS``) -> whether the proposal matches the reference."""
    steps: tuple[int, int]
    """(scored steps of the reference whose proposed act matches, scored steps)."""
    diffs: tuple[str, ...]
    """``field=proposed->reference`` for every mismatch, for ``--errors``."""


@dataclass
class Scores:
    """Counts over items of one group (a source, or a source and rule)."""

    n: int = 0
    """Items."""
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    """exact / early / late / flip and one count per matching field."""
    step_hits: int = 0
    """Scored steps with the reference's act."""
    step_n: int = 0
    """Scored steps."""

    def add(self, it: Item) -> None:
        """Count one item."""
        self.n += 1
        self.counts[it.onset] += 1
        for f, ok in it.match.items():
            self.counts[f] += ok
        self.step_hits += it.steps[0]
        self.step_n += it.steps[1]

    def share(self, key: str) -> float:
        """Share of items with ``key`` (0.0 when empty)."""
        return self.counts[key] / self.n if self.n else 0.0


def _act_at(d: TrajectoryDecision, k: int) -> str:
    if d.onset is None or k < d.onset:
        return "CONTINUE"
    if k == d.onset:
        return str(d.act)
    return str(d.post_act or DEFAULT_POST_ACT)


def compare(p: TrajectoryDecision, ref: TrajectoryDecision, n_actions: int) -> Item:
    """Compare one proposal with its reference decision (``n_actions``: the trajectory's
    decision points, for the step score over the reference's scored steps)."""
    if p.onset == ref.onset:
        onset = "exact"
    elif p.onset is None or ref.onset is None:
        onset = "flip"
    else:
        onset = "early" if p.onset < ref.onset else "late"
    post_p = p.post_act or DEFAULT_POST_ACT if p.onset is not None else None
    post_r = ref.post_act or DEFAULT_POST_ACT if ref.onset is not None else None
    values = {
        "act": (p.act, ref.act),
        "fail": (p.fail, ref.fail),
        "harm": (p.harm, ref.harm),
        "src": (p.src, ref.src),
        "cite": (p.cite, ref.cite),
        "post": (post_p, post_r),
    }
    match = {f: a == b for f, (a, b) in values.items()}
    last = ref.onset if ref.onset is not None else n_actions
    hits = sum(_act_at(p, k) == _act_at(ref, k) for k in range(1, last + 1))
    diffs = tuple(
        [f"onset={p.onset}->{ref.onset}"] * (onset != "exact")
        + [f"{f}={a}->{b}" for f, (a, b) in values.items() if a != b]
    )
    return Item(p.trajectory_id, p.proposer, onset, match, (hits, last), diffs)


def reference(
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Sequence[Review],
    reviewers: Iterable[str] | None = None,
) -> tuple[dict[str, TrajectoryDecision], int, int]:
    """(reviewed, undisputed reference decisions by trajectory, conflicts skipped, disputed
    skipped). With ``reviewers``, only trajectories one of them reviewed count, and only their
    reviews (plus any adjudication) decide."""
    chosen = set(reviewers) if reviewers else None
    if chosen is not None:
        mine = {r.trajectory_id for r in reviews if r.reviewer in chosen}
        reviews = [
            r
            for r in reviews
            if r.trajectory_id in mine and (r.reviewer in chosen or r.decision == "adjudicate")
        ]
    decisions, conflicts = effective_decisions(proposals, reviews)
    ref = {t: d for t, d in decisions.items() if d.reviewed and not d.disputed}
    disputed = sum(1 for d in decisions.values() if d.reviewed and d.disputed)
    return ref, len(conflicts), disputed


def evaluate(
    proposals: Mapping[str, TrajectoryDecision],
    ref: Mapping[str, TrajectoryDecision],
    n_actions: Mapping[str, int],
) -> list[Item]:
    """One Item per referenced trajectory that has a proposal, in natural id order."""
    return [
        compare(proposals[t], ref[t], n_actions[t])
        for t in sorted(ref, key=natural_key)
        if t in proposals and t in n_actions
    ]


def table(items: Sequence[Item], title: str = "") -> str:
    """Markdown table: one row per source (all rules) and per source and rule."""
    groups: dict[tuple[str, str], Scores] = defaultdict(Scores)
    for it in items:
        s = source_of(it.trajectory_id)
        groups[(s, "all")].add(it)
        groups[(s, it.rule)].add(it)
    head = (
        "| source | rule | n | onset | early | late | flip | act | fail | harm | src | cite "
        "| post | steps |"
    )
    lines = [f"{title}\n" if title else "", head, "|" + " --- |" * 14]
    for (s, rule), sc in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):  # fmt: skip
        pct = [f"{sc.share(f):.0%}" for f in ("exact",)]
        pct += [str(sc.counts[k]) for k in ("early", "late", "flip")]
        pct += [f"{sc.share(f):.0%}" for f in FIELDS]
        steps = f"{sc.step_hits / sc.step_n:.0%}" if sc.step_n else "-"
        name = f"**{rule}**" if rule == "all" else rule
        lines.append(f"| {s} | {name} | {sc.n} | " + " | ".join(pct) + f" | {steps} |")
    if not items:
        lines.append("| (no reviewed items) |" + " |" * 13)
    return "\n".join(lines).lstrip("\n")


def _proposals_live(work: Path, sources: Sequence[str]) -> tuple[dict[str, TrajectoryDecision], dict[str, int]]:  # fmt: skip
    from bench.label import label_trajectories, load_trajectories

    tax = load_taxonomy()
    props: dict[str, TrajectoryDecision] = {}
    n: dict[str, int] = {}
    for s in sources:
        trajs = load_trajectories(work / "extract" / s / "trajectories.jsonl")
        decisions, _ = label_trajectories(trajs, tax)
        props.update({d.trajectory_id: d for d in decisions})
        n.update({t.id: len(t.actions()) for t in trajs})
    return props, n


def _proposals_stored(labels: Path, sources: Sequence[str]) -> tuple[dict[str, TrajectoryDecision], dict[str, int]]:  # fmt: skip
    from bench.labels import decisions_from_rows

    props: dict[str, TrajectoryDecision] = {}
    n: dict[str, int] = defaultdict(int)
    for s in sources:
        path = labels / f"{s}.jsonl" if labels.is_dir() else labels
        rows = load_labels(path)
        props.update(decisions_from_rows(rows))
        for r in rows:
            n[r.trajectory_id] += 1
    return props, dict(n)


def main(argv: list[str] | None = None) -> int:
    """Print the accuracy table(s); ``--errors`` adds one line per mismatching item."""
    p = argparse.ArgumentParser(
        prog="bench proposer_eval",
        description="Accuracy of the label proposals against reviewed decisions.",
        epilog="example: bench proposer_eval --reviewers agent-rev-c  (a held-out reviewer)",
    )
    p.add_argument("--source", action="append", metavar="NAME",
                   help="only this source (repeatable); default: every source with reviews")  # fmt: skip
    p.add_argument("--reviewers", metavar="A,B",
                   help="score only items these reviewers reviewed (comma-separated)")  # fmt: skip
    p.add_argument("--labels", type=Path,
                   help="evaluate stored label rows (a folder of <source>.jsonl or one file) "
                   "instead of running the proposer on the extractions")  # fmt: skip
    p.add_argument("--work", type=Path, help="work folder holding extract/ (default: work/)")
    p.add_argument("--reviews", type=Path, default=REVIEWS_DIR, help="review folder")
    p.add_argument("--errors", action="store_true", help="list every mismatching item")
    p.add_argument("--title", default="", help="heading printed above the table")
    p.add_argument("--quiet", action="store_true", help="warnings only")
    args = p.parse_args(argv)
    from bench._script import setup_logging

    setup_logging(args.quiet)
    reviews = load_reviews(args.reviews)
    if not reviews:
        raise DataError(f"no reviews under {args.reviews}: review with `python bench/review.py`")
    sources = args.source or sorted({source_of(r.trajectory_id) for r in reviews})
    reviews = [r for r in reviews if source_of(r.trajectory_id) in sources]
    if args.labels:
        props, n = _proposals_stored(args.labels, sources)
    else:
        props, n = _proposals_live(work_dir(args.work), sources)
    chosen = args.reviewers.split(",") if args.reviewers else None
    known = {r.reviewer for r in reviews}
    unknown = sorted(set(chosen or ()) - known)
    if unknown:
        raise DataError(f"no reviews by {unknown}: reviewers are {', '.join(sorted(known))}")
    ref, conflicts, disputed = reference(props, reviews, chosen)
    items = evaluate(props, ref, n)
    print(table(items, args.title))
    print(f"\n{len(items)} items; left out: {disputed} disputed, {conflicts} open conflicts")
    if args.errors:
        for it in items:
            if it.diffs:
                print(f"{it.trajectory_id} [{it.rule}] " + " ".join(it.diffs))
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
