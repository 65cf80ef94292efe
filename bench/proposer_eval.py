"""``python bench/proposer_eval.py``: how close the rule-based proposals come to reviewed decisions.

Compares each proposal (run live from the extracted trajectories, or read from a label folder
with ``--labels``) with the reviewed decision of the same trajectory and prints, per source and
per proposer rule: n, onset exact accuracy, onsets too early / too late, act at the onset,
fail / harm / src / cite at the onset, the act after the onset (``post``) and the share of scored
steps whose act matches (``steps``). Disputed trajectories and open conflicts are left out.

The reference is ``bench.labelling.reviews.effective_decisions`` over the chosen reviewers' reviews
(``--reviewers``, default all): an adjudication wins, agreeing reviews count, reviews that
disagree are a conflict and skipped. ``--reviewers agent-rev-c`` scores only the items those
reviewers reviewed, which is how a held-out check is made (develop on some reviewers' items,
report on another's). ``--errors`` lists every mismatch (ids and labels only).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/proposer_eval.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
from pathlib import Path

from bench.core.errors import DataError
from bench.core.ids import source_of
from bench.core.paths import REVIEWS_DIR, work_dir
from bench.core.script import setup_logging
from bench.labelling.evaluation import evaluate, proposals_live, proposals_stored, reference, table
from bench.labelling.reviews import load_reviews


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
    setup_logging(args.quiet)
    reviews = load_reviews(args.reviews)
    if not reviews:
        raise DataError(f"no reviews under {args.reviews}: review with `python bench/review.py`")
    sources = args.source or sorted({source_of(r.trajectory_id) for r in reviews})
    reviews = [r for r in reviews if source_of(r.trajectory_id) in sources]
    if args.labels:
        props, n = proposals_stored(args.labels, sources)
    else:
        props, n = proposals_live(work_dir(args.work), sources)
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
