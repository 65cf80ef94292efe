"""``python bench/label.py``: propose step labels for every extracted trajectory.

Reads ``<work>/extract/<source>/trajectories.jsonl``, runs the source's documented proposer rules
(bench/labelling/proposers/) and writes one label row per decision point, ids and labels only,
to ``<out>/<source>.jsonl`` in a deterministic order. Prints a summary per source.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/label.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
from pathlib import Path

from bench import sources as registry
from bench.core.errors import DataError
from bench.core.paths import LABELS_DIR, extracted, work_dir
from bench.core.script import setup_logging
from bench.core.taxonomy import load_taxonomy
from bench.labelling.decisions import write_labels
from bench.labelling.proposers import propose_all, summarise
from bench.sources.extraction import load_trajectories


def main(argv: list[str] | None = None) -> int:
    """Propose labels for the chosen sources; prints a summary line per source."""
    known = registry.names()
    p = argparse.ArgumentParser(
        prog="bench label", description="Propose step labels for every extracted trajectory."
    )
    p.add_argument(
        "--source",
        action="append",
        metavar="NAME",
        help=f"source to label (repeatable), or 'all'; default (and 'all'): every one of "
        f"{', '.join(known)} whose extraction exists",
    )
    p.add_argument("--work", type=Path, help="work folder holding extract/ (default: work/)")
    p.add_argument("--out", type=Path, default=LABELS_DIR, help="label folder (data/labels)")
    p.add_argument("--quiet", action="store_true", help="warnings only")
    args = p.parse_args(argv)
    setup_logging(args.quiet)
    work = work_dir(args.work)
    if args.source and "all" in args.source:
        args.source = None  # as in extract.py: 'all' is every source, here every extracted one
    if args.source:
        unknown = sorted(set(args.source) - set(known))
        if unknown:
            raise DataError(f"unknown source(s) {unknown}: use {', '.join(known)}")
        names = list(dict.fromkeys(args.source))
    else:
        names = [s for s in known if extracted(work, s).is_file()]
        if not names:
            raise DataError(
                f"no extractions under {work / 'extract'}: run `python bench/extract.py --source "
                "sample` (or another source) first, or pass --work"
            )
    tax = load_taxonomy()
    print(
        f"{'source':<11} {'traj':>6} {'points':>7} {'unsafe':>6} {'mean conf':>9} "
        f"{'onset=last':>10}  rules"
    )
    for s in names:
        trajs = load_trajectories(extracted(work, s))
        decisions, rows = propose_all(trajs, tax)
        write_labels(args.out / f"{s}.jsonl", rows)
        sm = summarise(s, trajs, decisions, len(rows))
        rules = ", ".join(f"{k}={v}" for k, v in sm.rules.items())
        print(
            f"{s:<11} {sm.trajectories:>6} {sm.decision_points:>7} {sm.unsafe:>6} "
            f"{sm.mean_confidence:>9.3f} {sm.onset_is_last:>10.1%}  {rules}"
        )
    print(f"wrote {args.out}")
    return 0
