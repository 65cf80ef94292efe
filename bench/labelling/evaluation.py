"""How close the rule-based proposals come to reviewed decisions (``bench/proposer_eval.py``).

Each proposal is compared with the reviewed decision of the same trajectory: the onset (exact,
early, late or a safe/unsafe flip), the act, fail, harm, src and cite at the onset, the act after
the onset, and the share of scored steps whose act matches. The reference is
``bench.labelling.reviews.effective_decisions`` over the chosen reviewers' reviews; disputed
trajectories and open conflicts are left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.ids import natural_key, source_of
from bench.core.paths import extracted
from bench.core.taxonomy import load_taxonomy
from bench.labelling.decisions import (
    DEFAULT_POST_ACT,
    TrajectoryDecision,
    decisions_from_rows,
    load_labels,
)
from bench.labelling.proposers import propose_all
from bench.labelling.reviews import Review, effective_decisions
from bench.sources.extraction import load_trajectories

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


def proposals_live(work: Path, sources: Sequence[str]) -> tuple[dict[str, TrajectoryDecision], dict[str, int]]:  # fmt: skip
    tax = load_taxonomy()
    props: dict[str, TrajectoryDecision] = {}
    n: dict[str, int] = {}
    for s in sources:
        trajs = load_trajectories(extracted(work, s))
        decisions, _ = propose_all(trajs, tax)
        props.update({d.trajectory_id: d for d in decisions})
        n.update({t.id: len(t.actions()) for t in trajs})
    return props, n


def proposals_stored(labels: Path, sources: Sequence[str]) -> tuple[dict[str, TrajectoryDecision], dict[str, int]]:  # fmt: skip
    props: dict[str, TrajectoryDecision] = {}
    n: dict[str, int] = defaultdict(int)
    for s in sources:
        path = labels / f"{s}.jsonl" if labels.is_dir() else labels
        rows = load_labels(path)
        props.update(decisions_from_rows(rows))
        for r in rows:
            n[r.trajectory_id] += 1
    return props, dict(n)
