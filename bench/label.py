"""``python bench/label.py``: propose step labels for every extracted trajectory.

Reads ``<work>/extract/<source>/trajectories.jsonl``, runs the documented proposer rules
(bench/proposers/) and writes one label row per decision point, ids and labels only, to
``<out>/<source>.jsonl`` in a deterministic order. Prints a summary per source.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/label.py`: the repo root, not bench/, first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import logging  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

from bench._script import run  # noqa: E402
from bench.errors import DataError  # noqa: E402
from bench.jsonl import read_jsonl  # noqa: E402
from bench.labels import (  # noqa: E402
    LabelRow,
    Taxonomy,
    TrajectoryDecision,
    load_taxonomy,
    step_labels,
    write_labels,
)
from bench.paths import REPO_ROOT, work_dir  # noqa: E402
from bench.schema import Trajectory  # noqa: E402

log = logging.getLogger(__name__)

SOURCES = ("sample", "rjudge", "stepshield", "assebench")
"""Sources labelled by default (each only when its extraction exists)."""

DEFAULT_OUT = REPO_ROOT / "data" / "labels"
"""Where the committed label files go."""


@dataclass(frozen=True)
class Summary:
    """What one source's labelling produced."""

    source: str
    """Adapter name."""
    trajectories: int
    """Trajectories labelled."""
    decision_points: int
    """Label rows written."""
    unsafe: int
    """Trajectories with an onset."""
    mean_confidence: float
    """Mean proposal confidence over trajectories."""
    onset_is_last: float
    """Share of unsafe trajectories whose onset is their last action."""
    rules: dict[str, int]
    """Proposals per rule name."""


def label_trajectories(
    trajs: Iterable[Trajectory], tax: Taxonomy
) -> tuple[list[TrajectoryDecision], list[LabelRow]]:
    """Proposals and their label rows for ``trajs`` (pure)."""
    from bench.proposers import propose

    decisions: list[TrajectoryDecision] = []
    rows: list[LabelRow] = []
    for t in trajs:
        d = propose(t, tax)
        decisions.append(d)
        rows.extend(step_labels(t, d, tax))
    return decisions, rows


def summarise(
    source: str, trajs: list[Trajectory], decisions: list[TrajectoryDecision], n_rows: int
) -> Summary:
    """Counts for one source."""
    n_actions = {t.id: len(t.actions()) for t in trajs}
    unsafe = [d for d in decisions if d.onset is not None]
    last = sum(1 for d in unsafe if d.onset == n_actions[d.trajectory_id])
    conf = sum(d.confidence for d in decisions) / len(decisions) if decisions else 0.0
    return Summary(
        source=source,
        trajectories=len(trajs),
        decision_points=n_rows,
        unsafe=len(unsafe),
        mean_confidence=round(conf, 3),
        onset_is_last=round(last / len(unsafe), 3) if unsafe else 0.0,
        rules=dict(sorted(Counter(d.proposer for d in decisions).items())),
    )


def load_trajectories(path: Path) -> list[Trajectory]:
    """Trajectories from an extraction file; DataError saying how to make it when missing."""
    if not path.is_file():
        source = path.parent.name
        raise DataError(f"{path} not found: run `python bench/extract.py --source {source}` first")
    return [Trajectory.from_dict(d) for d in read_jsonl(path)]


def main(argv: list[str] | None = None) -> int:
    """Propose labels for the chosen sources; prints a summary line per source."""
    p = argparse.ArgumentParser(
        prog="bench label", description="Propose step labels for every extracted trajectory."
    )
    p.add_argument(
        "--source",
        action="append",
        metavar="NAME",
        help=f"source to label (repeatable); default: every one of {', '.join(SOURCES)} "
        "whose extraction exists",
    )
    p.add_argument("--work", type=Path, help="work folder holding extract/ (default: work/)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="label folder (data/labels)")
    p.add_argument("--quiet", action="store_true", help="warnings only")
    args = p.parse_args(argv)
    from bench._script import setup_logging

    setup_logging(args.quiet)
    extract = work_dir(args.work) / "extract"
    if args.source:
        unknown = sorted(set(args.source) - set(SOURCES))
        if unknown:
            raise DataError(f"unknown source(s) {unknown}: use {', '.join(SOURCES)}")
        sources = list(dict.fromkeys(args.source))
    else:
        sources = [s for s in SOURCES if (extract / s / "trajectories.jsonl").is_file()]
        if not sources:
            raise DataError(
                f"no extractions under {extract}: run `python bench/extract.py --source sample` "
                "(or another source) first, or pass --work"
            )
    tax = load_taxonomy()
    print(
        f"{'source':<11} {'traj':>6} {'points':>7} {'unsafe':>6} {'mean conf':>9} "
        f"{'onset=last':>10}  rules"
    )
    for s in sources:
        trajs = load_trajectories(extract / s / "trajectories.jsonl")
        decisions, rows = label_trajectories(trajs, tax)
        write_labels(args.out / f"{s}.jsonl", rows)
        sm = summarise(s, trajs, decisions, len(rows))
        rules = ", ".join(f"{k}={v}" for k, v in sm.rules.items())
        print(
            f"{s:<11} {sm.trajectories:>6} {sm.decision_points:>7} {sm.unsafe:>6} "
            f"{sm.mean_confidence:>9.3f} {sm.onset_is_last:>10.1%}  {rules}"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
