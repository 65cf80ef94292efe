"""``python bench/build.py``: proposals + reviews -> gold labels -> a frozen, versioned dataset.

Builds the sample plus every upstream source that was extracted and labelled (or the sources
named with ``--source``) into ``data/build/<version>/`` and writes the leaderboard's ground truth;
the steps are those of ``bench.dataset.builder`` (docs/dataset.md). The version is a hash of the
trajectories, gold labels and splits, so the same inputs give the same version and bytes. A full
disk, a permission or a read-only folder stops it with one line naming the path and what was
kept (status 74); the version folder and every file are moved into place only when complete.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/build.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
from collections import Counter
from pathlib import Path

from bench import sources as registry
from bench.core.errors import StorageError
from bench.core.ioerrors import describe, sentence
from bench.core.jsonl import write_jsonl
from bench.core.labels import ACTS
from bench.core.paths import BUILD_DIR, GROUND_TRUTH, LABELS_DIR, REVIEWS_DIR, work_dir
from bench.core.script import setup_logging
from bench.dataset.builder import BuildResult, build, default_sources
from bench.dataset.hub import check_publishable, push
from bench.dataset.reader import LATEST_FILE
from bench.dataset.records import of_source
from bench.dataset.sft import sft_records
from bench.judging.gates import probe_gates


def print_truncation(result: BuildResult) -> None:
    """The truncation table per source and template."""
    print("truncation at the default budget (prompts / history elided / over budget):")
    for source, per in result.truncation.items():
        cells = ", ".join(f"{n} {t.total}/{t.elided}/{t.over_budget}" for n, t in per.items())
        print(f"  {source:<11} {cells}")


def print_leakage(result: BuildResult) -> None:
    """The leakage report per source, and the soft links the split could not keep whole."""
    print("leakage (what a judge tuned on dev could carry over to test):")
    for leak in result.leakage:
        print(f"  {leak.line()}")
    if result.plan is not None and result.plan.soft_crossing:
        crossing = result.plan.soft_crossing
        print(
            f"  soft links kept whole {len(result.plan.soft_joined)}, crossing {len(crossing)}: "
            + ", ".join(crossing)
        )


def print_pairs(result: BuildResult) -> None:
    """The contrast pairs: kept of written, agreement, and every gate with its verdict."""
    p = result.built.pairs
    if not p:
        return
    v = p["verification"]
    print(
        f"pairs: {v['kept']} kept of {v['written']} written ({v['dropped']} dropped, "
        f"{v['pending']} pending), kappa {v['kappa_act']}; max cosine between pairs "
        f"{p['max_cosine']}"
    )
    for g in p["gates"]:
        verdict = "ok" if g["passed"] else f"FAILS the gate (> {p['gate_max']})"
        print(f"  gate {g['probe']:<18} balanced accuracy at k* {g['value']:.3f}: {verdict}")
    if not p["gates"]:
        print("  gates not run (--no-gates)")


def print_summary(result: BuildResult) -> None:
    """The version, and per source: trajectories, points, gold acts and reviewed trajectories."""
    n_dev = sum(r.split == "dev" for r in result.records)
    print(
        f"dataset {result.version}: {len(result.records)} decision points "
        f"({n_dev} dev, {len(result.records) - n_dev} test) -> {result.path}"
    )
    for s in result.sources:
        mine = of_source(result.records, s.name)
        acts = Counter(r.point.gold.act for r in mine if r.point.gold)
        print(
            f"  {s.name:<11} {len(s.trajectories)} trajectories, {len(mine)} points, "
            + ", ".join(f"{a} {acts[a]}" for a in ACTS)
            + f", reviewed {len(result.gold[s.name].reviewed)}"
        )


def _latest(out: Path) -> str:
    """The version ``<out>/LATEST`` names ('' when none)."""
    try:
        return (out / LATEST_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _unsaved(e: OSError, args: argparse.Namespace, before: str) -> str:
    """The one line for a write the disk refused: the path, what was kept, what to do. A version
    folder is written under a temporary name and renamed whole, and every file is written
    atomically, so a failed build leaves the previous files as they were."""
    after = _latest(args.out)
    if after != before:
        kept = f"dataset {after} was written to {args.out}, the ground truth was not updated"
    elif before:
        kept = f"nothing was replaced: {args.out / LATEST_FILE} still names {before}"
    else:
        kept = f"nothing was written to {args.out}"
    return sentence(e, path=e.filename or args.out, saved=kept)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bench build", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--source",
        action="append",
        metavar="NAME",
        help="a source to build (repeatable; default: sample + every extracted and labelled source)",
    )
    ap.add_argument(
        "--work", type=Path, help="work folder holding extract/<source>/ (default: work/)"
    )
    ap.add_argument(
        "--out", type=Path, default=BUILD_DIR, help="build folder (default: data/build)"
    )
    ap.add_argument("--labels", type=Path, default=LABELS_DIR, help="label proposals folder")
    ap.add_argument("--reviews", type=Path, default=REVIEWS_DIR, help="reviews folder")
    ap.add_argument(
        "--ground-truth",
        type=Path,
        default=GROUND_TRUTH,
        help="ground-truth file to write (default: leaderboards/ground_truth.jsonl)",
    )
    ap.add_argument("--no-ground-truth", action="store_true", help="do not write the ground truth")
    ap.add_argument("--push-to-hub", metavar="REPO", help="upload the version to this dataset repo")
    ap.add_argument("--private", action="store_true", help="push to a private repository")
    ap.add_argument(
        "--export-sft",
        type=Path,
        metavar="PATH",
        help="also write chat-format training records of the dev split (JSONL)",
    )
    ap.add_argument(
        "--no-gates",
        action="store_true",
        help="skip the contrast pairs' shortcut-probe gates (faster; the card says they did not run)",
    )
    ap.add_argument("--quiet", action="store_true", help="warnings and errors only")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Build the dataset; see the module docstring and docs/dataset.md."""
    args = _parser().parse_args(argv)
    setup_logging(args.quiet)
    work = work_dir(args.work)
    names = args.source or default_sources(work, args.labels)
    if "all" in names:
        names = ["sample", *registry.upstream_names()]
    if args.push_to_hub:
        # the licence gate runs before anything is built, so a refused push costs nothing
        check_publishable({n: registry.get(n).license for n in names}, args.private)
    before = _latest(args.out)
    try:
        result = build(
            names,
            work=work,
            out=args.out,
            labels_dir=args.labels,
            reviews_dir=args.reviews,
            ground_truth=None if args.no_ground_truth else args.ground_truth,
            gates=None if args.no_gates else probe_gates,
        )
    except OSError as e:
        if describe(e) is None:
            raise
        raise StorageError(_unsaved(e, args, before)) from None
    if not args.quiet:
        print_summary(result)
        print_truncation(result)
        print_leakage(result)
        print_pairs(result)
        if not args.no_ground_truth:
            print(f"ground truth -> {args.ground_truth}")
    if args.export_sft:
        rows = sft_records(result.records, result.version)
        write_jsonl(args.export_sft, rows)
        if not args.quiet:
            print(f"sft export: {len(rows)} dev records -> {args.export_sft}")
    if args.push_to_hub:
        res = push(
            result.path,
            args.push_to_hub,
            private=args.private,
            licenses={s.name: s.license for s in result.sources},
            message=f"Foresight Bench dataset {result.version}",
        )
        print(f"pushed {result.version} to {res.repo} at revision {res.commit}")
    return 0
