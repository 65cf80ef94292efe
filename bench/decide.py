"""Run the judges in judges.toml over a built dataset, caching every decision.

    python bench/decide.py [--judge ID ...] [--split test] [--source S] [--limit N] [--force]
                           [--wait] [--quiet] [--judges PATH] [--out DIR] [--version V] [--check]
    python bench/decide.py --stress FAMILY|all [--judge ID ...]   # perturbed test points

Each judge writes ``<out>/<judge>/<dataset_version>/<config_hash>.jsonl`` (docs/FORMATS.md),
one line per decision appended and flushed as it completes. A rerun skips ids already answered
in that file (same config hash, same dataset version) and retries errored ones; a changed config
gets a new file. A judge whose optional dependency, weights or key is missing is skipped with
the reason in the summary. ``--check`` validates judges.toml and runs nothing.

One run writes a predictions file at a time: it holds ``<file>.jsonl.lock`` while it judges. A
second run on the same judge, config and dataset version exits at once (status 2) naming the
holder's pid, host and start time; with ``--wait`` it waits, then judges only what is left. A
lock left by a killed run is taken over, with a warning. SIGINT or SIGTERM (Ctrl-C, ``kill``)
stops pulling decision points, writes the decisions in flight, prints the summary and
"interrupted: N done; rerun to resume", and exits 130 (SIGINT) or 143 (SIGTERM); a second signal
stops at once. A full disk, a permission or a read-only folder stops the run with one line: how
many decisions the file holds, and to rerun (status 74).

``--stress`` judges the perturbed copies a stress family makes of the test points
(``bench.stress``, docs/stress.md) into ``<out>/<judge>/<dataset_version>/stress/<family>/
<config_hash>.jsonl``, cached and resumable the same way; a learned baseline is fitted on the
(unperturbed) dev split once for all families.

Judges never see gold labels: decision points are passed without ``gold``; only learned
baselines get the *dev* split's gold, through ``fit``, before they answer anything.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/decide.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
import logging
from collections.abc import Callable

from bench.core.errors import BenchError
from bench.core.paths import BUILD_DIR, PREDICTIONS
from bench.core.script import Interrupts, setup_logging
from bench.jobs import submit
from bench.judging import specs as judges_mod
from bench.judging.local import (
    SPLITS,
    Outcome,
    run_judge,
    run_stress,
    select_points,
    summary,
)
from bench.judging.protocol import JudgeSpec
from bench.stress import FAMILIES
from bench.stress.selection import stress_selection

log = logging.getLogger("bench.decide")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bench decide", description=__doc__.split("\n\n")[0])
    ap.add_argument("--judge", action="append", metavar="ID", help="run only this judge (repeat)")
    ap.add_argument(
        "--split",
        default="test",
        choices=list(SPLITS),
        help="which split to judge (default: test; lite: a fixed stratified subset of test)",
    )
    ap.add_argument("--source", help="only decision points of this source")
    ap.add_argument("--limit", type=int, help="only the first N decision points (build order)")
    ap.add_argument(
        "--force",
        action="store_true",
        help="judge every selected point again, even if already answered",
    )
    ap.add_argument(
        "--wait",
        action="store_true",
        help="when another run is writing the same predictions file, wait for it instead of "
        "exiting (then judge only what it left)",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bars, warnings only")
    ap.add_argument("--judges", metavar="PATH", help="judges file (default: ./judges.toml)")
    ap.add_argument(
        "--out",
        metavar="DIR",
        default=str(PREDICTIONS),
        help="predictions root (default: leaderboards/predictions)",
    )
    ap.add_argument("--version", help="dataset version (default: data/build/LATEST)")
    ap.add_argument(
        "--build-dir", metavar="DIR", help="built datasets folder (default: data/build)"
    )
    ap.add_argument(
        "--on", default="local", choices=sorted(PLACES), help="where to run (default: here)"
    )
    submit.add_arguments(ap)  # the --on hf-jobs options (docs/hf-jobs.md)
    ap.add_argument(
        "--stress",
        metavar="FAMILY",
        choices=[*FAMILIES, "all"],
        help="judge the perturbed test points of a stress family ("
        + ", ".join(FAMILIES)
        + ", or all); see docs/stress.md",
    )
    ap.add_argument("--check", action="store_true", help="validate the judges file and exit")
    return ap


def check(specs: list[JudgeSpec], path: str) -> int:
    """Print the validated judges (nothing is imported beyond backend modules)."""
    warned = 0
    for s in specs:
        what = f"{s.prompt}/{s.parser}" if s.generative else "scorer"
        if s.scoring != "generate":
            what += f" ({s.scoring})"
        print(f"ok  {s.id:<22} {s.backend:<13} {what:<18} {s.model or '-'}")
        if judges_mod.unpinned(s):
            warned += 1
            print(
                f"warn {s.id}: hub model {s.model!r} has no pinned revision; add "
                'revision = "<commit sha>" to the row (results from unpinned weights are marked '
                "on the leaderboard)"
            )
    tail = f"; {warned} unpinned" if warned else ""
    print(f"{path}: {len(specs)} judges valid{tail}")
    return 0


def run_local(specs: list[JudgeSpec], args: argparse.Namespace) -> int:
    """Run the judges here, one after another; SIGINT or SIGTERM stops them cleanly (module
    docstring)."""
    if args.stress:
        if args.split not in ("test", "lite"):
            raise BenchError("--stress perturbs test points only: drop --split (or use lite)")
        if args.on != "local":
            raise BenchError("--stress runs here only (--on local)")
    sel = select_points(
        version=args.version,
        build_dir=args.build_dir or BUILD_DIR,
        split=args.split,
        source=args.source,
        limit=args.limit,
    )
    opts = dict(out=args.out, force=args.force, quiet=args.quiet, wait=args.wait)
    outcomes: list[Outcome] = []
    with Interrupts() as stop:
        if args.stress:
            families = list(FAMILIES) if args.stress == "all" else [args.stress]
            sels = [stress_selection(sel, f) for f in families]
            log.info(
                "dataset %s: stress %s",
                sel.version,
                ", ".join(f"{s.stress} {len(s.points)}" for s in sels),
            )
            for spec in specs:
                if stop.is_set():
                    break
                outcomes += run_stress(spec, sels, stop=stop.is_set, **opts)
        else:
            log.info(
                "dataset %s: %d decision points selected, %d dev points for fitting",
                sel.version,
                len(sel.points),
                len(sel.dev),
            )
            for spec in specs:
                if stop.is_set():
                    break
                outcomes.append(run_judge(spec, sel, stop=stop.is_set, **opts))
    print(summary(outcomes))
    if stop.is_set():
        done = sum(sum(o.counts.values()) for o in outcomes)
        print(f"interrupted: {done} done; rerun to resume")
        return stop.status
    return 1 if any(o.state == "failed" for o in outcomes) else 0


PLACES: dict[str, Callable[[list[JudgeSpec], argparse.Namespace], int]] = {
    "local": run_local,
    "hf-jobs": submit.run_remote,
}
"""Where judges can run (``--on``); a remote runner adds an entry here."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: validate judges.toml, then run (or --check only)."""
    args = _parser().parse_args(argv)
    setup_logging(quiet=args.quiet)
    path = args.judges or str(judges_mod.DEFAULT_PATH)
    specs = judges_mod.load(path)
    if args.check:
        return check(specs, path)
    specs = judges_mod.select(specs, args.judge)
    if args.stress:
        return run_local(specs, args)
    return PLACES[args.on](specs, args)
