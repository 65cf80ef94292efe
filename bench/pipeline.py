"""``python bench/pipeline.py``: the whole flow on the embedded corpora, offline.

The embedded corpora are the project's own: the sample cases and the contrast pairs
(docs/pairs.md), so a fresh clone sees at once what the benchmark measures: the pairs column,
where every one-artefact shortcut probe sits at 0.5.

extract -> label -> build -> decide -> leaderboard, each stage the same script a maintainer runs,
with every output under one work folder (default ``work/pipeline``) so that nothing committed is
touched. It is the project's main job on a fresh clone: it needs no raw data, no network and no
model weights. Judges whose weights, keys or optional dependencies are missing are skipped by the
runner with their reason.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/pipeline.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from bench import build, decide, extract, label, leaderboard
from bench import sources as registry
from bench.core.errors import BenchError
from bench.core.paths import JUDGES_TOML, work_dir
from bench.core.script import run, setup_logging
from bench.judging.specs import load as load_judges

log = logging.getLogger(__name__)

OFFLINE_BACKENDS = ("baseline", "sklearn", "embedding", "probe")
"""Backends that run on a bare CPU machine with no weights or keys: the default judges (the
shortcut probes among them, as reference lines)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    return run(_main, argv)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench pipeline",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument(
        "--source",
        action="append",
        metavar="NAME",
        help="sources to run (default: the embedded corpora, sample and pairs). Real sources "
        "need $FORESIGHT_DATA.",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="work folder for every output (default: work/pipeline)",
    )
    p.add_argument(
        "--judge",
        action="append",
        metavar="ID",
        help="judges to run (default: every judges.toml row whose backend is one of "
        f"{', '.join(OFFLINE_BACKENDS)})",
    )
    p.add_argument(
        "--all-judges",
        action="store_true",
        help="run every judge in judges.toml (those that cannot run here are skipped)",
    )
    p.add_argument(
        "--split",
        default="test",
        choices=["dev", "test", "all"],
        help="split the judges decide on (default: test)",
    )
    p.add_argument("--quiet", action="store_true", help="warnings only")
    return p


Stage = tuple[str, Callable[[list[str] | None], int], list[str]]
"""(command name, its main, its argv)."""


def _stages(args: argparse.Namespace, out: Path, lb: Path) -> list[Stage]:
    """Every stage with the argv that chains it to the one before, under ``out``."""
    sources = args.source or registry.embedded_names()
    q = ["--quiet"] if args.quiet else []
    gt = lb / "ground_truth.jsonl"
    src_args = [a for s in sources for a in ("--source", s)]
    judges: list[str] = []
    if not args.all_judges:
        default = [j.id for j in load_judges(JUDGES_TOML) if j.backend in OFFLINE_BACKENDS]
        for j in args.judge or default:
            judges += ["--judge", j]
    build_argv = [*src_args, "--work", str(out), "--labels", str(out / "labels")]
    build_argv += ["--out", str(out / "build"), "--ground-truth", str(gt), *q]
    decide_argv = [*judges, "--split", args.split, "--build-dir", str(out / "build")]
    decide_argv += ["--out", str(lb / "predictions"), *q]
    board_argv = ["--ground-truth", str(gt), "--predictions", str(lb / "predictions")]
    board_argv += ["--judges", str(JUDGES_TOML), "--out", str(lb), *q]
    return [
        ("extract", extract.main, [*src_args, "--out", str(out / "extract"), *q]),
        ("label", label.main, [*src_args, "--work", str(out), "--out", str(out / "labels"), *q]),
        ("build", build.main, build_argv),
        ("decide", decide.main, decide_argv),
        ("leaderboard", leaderboard.main, board_argv),
    ]


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.quiet)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the main job never reaches for a hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out = args.out or work_dir() / "pipeline"
    lb = out / "leaderboards"
    stages = _stages(args, out, lb)
    t_all = time.perf_counter()
    for name, fn, stage_argv in stages:
        t0 = time.perf_counter()
        if not args.quiet:
            print(f"\n=== {name}: python bench/{name}.py {' '.join(stage_argv)}", flush=True)
        rc = fn(stage_argv)
        if rc != 0:
            raise BenchError(f"stage {name!r} failed with exit status {rc}; its message is above")
        log.info("%s done in %.1f s", name, time.perf_counter() - t0)
    print(f"\npipeline finished in {time.perf_counter() - t_all:.1f} s; outputs under {out}")
    print(f"leaderboard: {lb / 'leaderboard.md'}")
    return 0
