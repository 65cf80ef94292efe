"""``python bench/review.py``: review label proposals, one trajectory at a time or scripted.

Interactive (the default): ``--reviewer NAME`` walks the queue (unreviewed first, lowest
confidence first; ``--source``, ``--category``, ``--label`` filter it) and shows the policy, the
numbered turns with each decision point k marked, the proposal and the source's risk description;
answer a(ccept), s(et), d(ispute), k (skip) or q (quit). Scripted: ``--accept ID``,
``--set ID onset=3 act=STOP fail=... note="..."``, ``--dispute ID note="..."`` and
``--adjudicate ID [from=REVIEWER] key=value ... note="..."``. ``--stats`` prints coverage,
agreement (Cohen's kappa for onset and act) and open conflicts. Decisions are appended to
``data/reviews/<reviewer>.jsonl``; see docs/labelling.md.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/review.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from bench import sources as registry
from bench.core.errors import DataError
from bench.core.ids import source_of
from bench.core.jsonl import read_jsonl
from bench.core.paths import LABELS_DIR, REVIEWS_DIR, extracted, work_dir
from bench.core.schema import Trajectory
from bench.core.script import setup_logging
from bench.core.taxonomy import load_taxonomy
from bench.labelling.console import (
    describe_decision,
    interactive,
    load_trajectories,
    record_review,
    render,
    stats_report,
)
from bench.labelling.decisions import TrajectoryDecision, load_proposals
from bench.labelling.reviews import (
    Kind,
    QueueItem,
    Review,
    build_queue,
    latest,
    load_reviews,
)

log = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench review",
        description="Review label proposals: interactively one trajectory at a time, scripted, "
        "or print --stats.",
        epilog="example: bench review --reviewer ana --set rjudge:7 onset=2 act=ASK "
        'fail=unauthorized_action harm=property_damage src=agent_error note="grants a stranger '
        'a permanent key without asking"',
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--stats", action="store_true", help="coverage, agreement, conflicts")
    g.add_argument("--accept", metavar="ID", help="accept the proposal for trajectory ID")
    g.add_argument("--set", metavar="ID", help="set your decision for ID (key=value ...)")
    g.add_argument("--dispute", metavar="ID", help="dispute ID's upstream label (note=...)")
    g.add_argument("--adjudicate", metavar="ID", help="settle a conflict on ID (from=REVIEWER)")
    g.add_argument("--list", action="store_true", help="print the queue instead of reviewing")
    g.add_argument(
        "--show",
        metavar="ID",
        help="print the review screen for trajectory ID and exit (no prompt)",
    )
    p.add_argument("values", nargs="*", help="key=value: onset, act, fail, harm, src, cite, "
                   "post_act, note (and from= for --adjudicate)")  # fmt: skip
    p.add_argument("--reviewer", help="your reviewer name (file data/reviews/<name>.jsonl)")
    p.add_argument("--source", action="append", help="only this source (repeatable)")
    p.add_argument("--category", action="append", help="only this category (repeatable)")
    p.add_argument("--label", choices=("safe", "unsafe"), help="only this upstream label")
    p.add_argument("--blind", action="store_true", help="hide other reviewers' decisions")
    p.add_argument(
        "--second", type=float, metavar="FRACTION",
        help="second-review queue: a fixed random FRACTION of items others reviewed (use --blind)",
    )  # fmt: skip
    p.add_argument("--seed", default="second-review", help="sample seed for --second")
    p.add_argument("--limit", type=int, help="at most this many queue items")
    p.add_argument("--full", action="store_true", help="show long texts whole")
    p.add_argument("--work", type=Path, help="work folder holding extract/ (default: work/)")
    p.add_argument("--labels", type=Path, default=LABELS_DIR, help="proposal folder")
    p.add_argument("--reviews", type=Path, default=REVIEWS_DIR, help="review folder")
    p.add_argument("--quiet", action="store_true", help="warnings only")
    return p


def _show(
    tid: str,
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Sequence[Review],
    work: Path,
    args: argparse.Namespace,
) -> None:
    """Print one trajectory with its proposal (and, unless blind, its reviews)."""
    if tid not in proposals:
        raise DataError(f"no proposal for {tid!r}: check the id (source:id) or run label.py")
    trajs = load_trajectories(work, [source_of(tid)])
    if tid not in trajs:
        raise DataError(f"{tid} is not in the extracted trajectories; re-run extract.py")
    others = [] if args.blind else list(latest(reviews).get(tid, {}).values())
    print(render(trajs[tid], proposals[tid], others, full=args.full))


def _queue(
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Sequence[Review],
    work: Path,
    args: argparse.Namespace,
) -> tuple[dict[str, Trajectory], list[QueueItem]]:
    """(the trajectories of the chosen sources, the review queue after the filters)."""
    sources: list[str] = args.source or sorted({source_of(t) for t in proposals})
    trajs = load_trajectories(work, sources)
    keep = [
        t.id
        for t in trajs.values()
        if t.id in proposals
        and (not args.category or t.category in args.category)
        and (not args.label or t.label == args.label)
    ]
    items = build_queue(
        proposals, reviews, reviewer=args.reviewer, keep=keep, second=args.second, seed=args.seed
    )
    return trajs, items if args.limit is None else items[: args.limit]


def _stats(
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Sequence[Review],
    work: Path,
    only: Sequence[str] | None,
) -> None:
    """--stats: the report over the chosen sources, and a note per source verified before
    release."""
    chosen = {t for t in proposals if not only or source_of(t) in only}
    sources = {source_of(t) for t in chosen}
    print(
        stats_report(
            {t: proposals[t] for t in chosen},
            [r for r in reviews if r.trajectory_id in chosen],
            subsets=_subsets(work, sources),
        )
    )
    for s in sorted(sources):
        if registry.get(s).verified:
            print(
                f"NOTE {s}: released only after blind verification, so the build counts every "
                f"label as reviewed (`python bench/pairs.py stats` gives its figures)"
            )


def _subsets(work: Path, sources: set[str]) -> dict[str, str]:
    """Trajectory id -> subset for the sources extracted under ``work`` (for --stats); the
    sources not extracted are left out (their coverage is still shown per source)."""
    out: dict[str, str] = {}
    for s in sorted(sources):
        path = extracted(work, s)
        if path.is_file():
            out |= {str(d["id"]): str(d.get("subset") or "") for d in read_jsonl(path)}
    return out


def main(argv: list[str] | None = None, stdin: TextIO | None = None) -> int:
    """Entry point; ``stdin`` lets tests drive the interactive mode."""
    args = _parser().parse_args(argv)
    setup_logging(args.quiet)
    proposals = load_proposals(args.labels)
    if not proposals:
        raise DataError(f"no proposals in {args.labels}: run `python bench/label.py` first")
    reviews = load_reviews(args.reviews)
    work = work_dir(args.work)
    if args.stats:
        _stats(proposals, reviews, work, args.source)
        return 0
    if args.show:
        _show(str(args.show), proposals, reviews, work, args)
        return 0
    scripted = args.accept or args.set or args.dispute or args.adjudicate
    if args.values and not scripted:
        raise DataError(f"{args.values[0]!r}: key=value pairs go with --set/--dispute/--adjudicate")
    if not args.reviewer and not args.list:
        raise DataError(
            "say who you are: --reviewer NAME (your reviews go to data/reviews/NAME.jsonl)"
        )
    tax = load_taxonomy()
    if scripted:
        kind: Kind = (
            "accept" if args.accept else "set" if args.set else
            "dispute" if args.dispute else "adjudicate"
        )  # fmt: skip
        r, path = record_review(
            str(scripted), kind, args.reviewer, args.values, proposals, reviews, work, tax,
            reviews_dir=args.reviews,
        )  # fmt: skip
        print(
            f"recorded {kind} by {r.reviewer} for {r.trajectory_id}: {describe_decision(r)} -> {path}"
        )
        return 0
    trajs, items = _queue(proposals, reviews, work, args)
    if args.list:
        for q in items:
            print(
                f"{q.trajectory_id:<28} {q.status:<10} {q.confidence:.2f} {','.join(q.reviewers)}"
            )
        print(f"{len(items)} item(s)")
        return 0
    if not items:
        print("nothing to review with these filters (see --stats)")
        return 0
    done = interactive(
        items, trajs, proposals, reviews, reviewer=args.reviewer, reviews_dir=args.reviews,
        tax=tax, blind=args.blind, full=args.full, inp=stdin or sys.stdin, out=sys.stdout,
    )  # fmt: skip
    log.info("session: %s", dict(done))
    return 0
