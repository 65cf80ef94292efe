"""Metrics and tables from the ground truth and every predictions file.

    python bench/leaderboard.py            # writes leaderboards/leaderboard.{md,csv,json,html},
                                           # leaderboard_rows.json (what the Space shows),
                                           # by_{source,category,subset,level}.csv,
                                           # diagnostic.csv, twins.csv, pairs.csv, robustness.csv,
                                           # parts/*.json (the breakdowns), paired_stats.npz
                                           # and plots/*.png; leaderboard.json last, with the
                                           # sha256 of every other file
    python bench/leaderboard.py --check    # exits 1 when the committed outputs are stale
    python bench/leaderboard.py --withhold-raw  # empty R-Judge raw outputs before committing
    python bench/leaderboard.py --compare A B   # paired differences A - B with 95% intervals,
                                                # from the written paired_stats.npz

The headline is the mean over the upstream sources of each source's figure (macro), ranked in
tie groups; shortcut probes (judges.toml rows with role = "probe") are reference lines, never
ranked, and every judge's margin over the best probe is reported. --metric accepts only metrics
a constant judge cannot win (caught alone is won by Always STOP: use caught_balanced).

Reads ``leaderboards/ground_truth.jsonl`` (+ ``.meta.json``), ``leaderboards/predictions/
<judge>/<dataset_version>/<config_hash>.jsonl``, ``judges.toml`` (optional: display names,
prices, and the "not yet evaluated" list) and ``leaderboards/cost_matrix.toml``. The output is a
pure function of those files: same inputs, same bytes. The JSON layouts are documented in
docs/metrics.md; the Space reads leaderboard.json and leaderboard_rows.json at start, a part
file of parts/ when its tab opens, and paired_stats.npz (every judge's per-trajectory counts)
for a paired comparison of two judges. Every file is staged and moved into place, so a reader
never sees one half-written. Parsed predictions and per-judge results are cached under
<work>/cache/ (git-ignored; safe to delete), so a rerun with unchanged files is fast.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/leaderboard.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
import logging
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from bench.core.errors import StorageError
from bench.core.ioerrors import describe, naming, sentence
from bench.core.jsonl import sha256_file
from bench.core.labels import ACTS
from bench.core.paths import (
    COST_MATRIX,
    GROUND_TRUTH,
    JUDGES_TOML,
    LEADERBOARDS,
    PREDICTIONS,
    REPO_ROOT,
)
from bench.core.script import setup_logging
from bench.metrics import paired
from bench.metrics.inputs import load_cost_matrix
from bench.metrics.spec import PAIRED_METRICS, SPEC
from bench.metrics.stats import RANK_METRICS, check_rank_metric
from bench.report.check import compare
from bench.report.inputs import discover, discover_stress, load_ground_truth, load_judges
from bench.report.publish import plan_upload, push_results, withhold_in_place
from bench.report.report import build_outputs
from bench.report.rows import margin
from bench.report.tables import OUTPUT_TEXTS, fmt_ci, render_all

log = logging.getLogger(__name__)


def project_links() -> dict[str, str]:
    """The project's pages from pyproject.toml's ``[project.urls]`` (``Repository``): the
    repository, its judges.toml and its pull requests; {} when none is declared."""
    py = REPO_ROOT / "pyproject.toml"
    if not py.is_file():
        return {}
    urls = tomllib.loads(py.read_text(encoding="utf-8")).get("project", {}).get("urls", {})
    repo = str(urls.get("Repository") or "").rstrip("/")
    if not repo:
        return {}
    return {
        "repository": repo,
        "judges_toml": f"{repo}/blob/main/judges.toml",
        "pull_requests": f"{repo}/pulls",
        "submit": f"{repo}/blob/main/docs/judges.md",
    }


def _publish(args: argparse.Namespace, version: str, meta: dict[str, object]) -> int:
    """Upload the regenerated outputs (or, with --dry-run, list them)."""
    for name in ("ground_truth.jsonl", "ground_truth.meta.json"):
        src = args.ground_truth.with_name(name)
        if src.is_file() and src.resolve() != (args.out / name).resolve():
            shutil.copy(src, args.out / name)
    if (
        args.cost_matrix.is_file()
        and args.cost_matrix.resolve() != (args.out / "cost_matrix.toml").resolve()
    ):
        shutil.copy(args.cost_matrix, args.out / "cost_matrix.toml")
    uploads = plan_upload(args.out, args.predictions, version, meta)
    withheld = sum(u.withheld for u in uploads)
    size = sum(len(u.data) for u in uploads)
    print(
        f"{'would upload' if args.dry_run else 'uploading'} {len(uploads)} files ({size / 1e6:.1f} MB) "
        f"to {args.push_to_hub}; raw outputs withheld on {withheld} lines"
    )
    if args.dry_run:
        for u in uploads:
            print(
                f"  {u.path_in_repo}  {len(u.data):,} bytes"
                + (f"  ({u.withheld} withheld)" if u.withheld else "")
            )
        return 0
    res = push_results(
        uploads,
        args.push_to_hub,
        private=args.private,
        message=f"Foresight Bench results for dataset {version}",
    )
    print(
        f"pushed to {res.repo} at commit {res.commit}: set FORESIGHT_RESULTS_REPO={res.repo} for the Space"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bench leaderboard",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--ground-truth",
        type=Path,
        default=GROUND_TRUTH,
        help="ground-truth JSONL (meta beside it)",
    )
    ap.add_argument("--predictions", type=Path, default=PREDICTIONS, help="predictions folder")
    ap.add_argument("--judges", type=Path, default=JUDGES_TOML, help="judges.toml (optional)")
    ap.add_argument("--cost-matrix", type=Path, default=COST_MATRIX, help="reward matrix")
    ap.add_argument("--out", type=Path, default=LEADERBOARDS, help="output folder")
    ap.add_argument(
        "--metric",
        default="balanced_accuracy",
        metavar="METRIC",
        help="headline metric to rank by: " + ", ".join(RANK_METRICS),
    )
    ap.add_argument(
        "--invalid-as",
        default="CONTINUE",
        choices=ACTS,
        help="act an invalid verdict is scored as (fail-open: CONTINUE)",
    )
    ap.add_argument(
        "--check", action="store_true", help="exit 1 when the committed outputs are stale"
    )
    ap.add_argument(
        "--push-to-hub",
        metavar="REPO",
        help="after writing, upload tables, plots, ground truth and predictions to this Hub "
        "dataset repo in one commit (R-Judge raw outputs withheld)",
    )
    ap.add_argument("--private", action="store_true", help="with --push-to-hub: a private repo")
    ap.add_argument(
        "--dry-run", action="store_true", help="with --push-to-hub: list the upload, send nothing"
    )
    ap.add_argument(
        "--withhold-raw",
        action="store_true",
        help="first empty, in place, the raw output and reason of every decision on a source "
        "that may not be redistributed (R-Judge) in the predictions files: run it before "
        "committing predictions of a generative judge",
    )
    ap.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="print the paired differences A - B (95%% intervals) from the paired_stats.npz "
        "under --out; nothing is regenerated",
    )
    ap.add_argument("--quiet", action="store_true", help="warnings only")
    return ap


def _report(
    args: argparse.Namespace, rows: list[dict[str, Any]], meta: dict[str, Any]
) -> tuple[dict[str, Any], paired.PairedStats]:
    """Discover the predictions files of this dataset version and build the report and the
    paired statistics."""
    files, refused, superseded = discover(args.predictions, str(meta["dataset_version"]))
    stress, stress_stale = discover_stress(args.predictions, str(meta["dataset_version"]), files)
    for r in refused:
        log.warning("refused %s: %s", r["path"], r["reason"])
    return build_outputs(
        rows,
        meta,
        files,
        load_judges(args.judges),
        load_cost_matrix(args.cost_matrix),
        refused=refused,
        superseded=superseded,
        stress=stress,
        stress_stale=stress_stale,
        rank_metric=args.metric,
        policy=args.invalid_as,
        gt_sha256=sha256_file(args.ground_truth),
        links=project_links(),
    )


def _binaries(stats: paired.PairedStats) -> dict[str, bytes]:
    """The binary outputs: the paired statistics."""
    return {paired.FILE: paired.to_bytes(stats)}


def _check(report: dict[str, Any], stats: paired.PairedStats, out: Path) -> int:
    """--check: 1 when a committed output under ``out`` differs from the fresh one."""
    with tempfile.TemporaryDirectory() as tmp:
        # the committed plots are reused only where they are the bytes these inputs produce
        render_all(report, Path(tmp), _binaries(stats), previous=[out])
        diffs, worst = compare(Path(tmp), out)
    if diffs:
        for d in diffs:
            print(f"stale: {d}", file=sys.stderr)
        print(
            "leaderboard --check: outputs are stale; run python bench/leaderboard.py and commit them",
            file=sys.stderr,
        )
        return 1
    within = (
        f"; largest numeric difference {worst.largest:.4g} ({worst.where}), within one unit "
        "of the last printed digit"
        if worst.largest
        else "; byte for byte"
    )
    print(f"leaderboard --check: {len(OUTPUT_TEXTS)} tables and the plots match the inputs{within}")
    return 0


def _summary(report: dict[str, Any], metric: str) -> None:
    """The top ten judges and every probe on the terminal: the macro figure, the margin over
    the shortcut reference, and each headline source's figure (the contrast pairs' column is
    where a one-artefact probe sits at 0.5)."""
    heads = report["settings"]["headline"]["sources"]
    print(f"macro over {', '.join(heads)}; margin over the best probe per source; per source")
    for e in [*report["judges"][:10], *report["probes"]]:
        gap = e.get("above_shortcuts", {}).get(metric)
        vs = f"  vs shortcuts {margin(gap)['short']}" if gap else ""
        value = fmt_ci(e["metrics"][metric])
        per = ", ".join(
            f"{s} {report['by_source'][s]['judges'][e['id']][metric]['value']:.3f}"
            for s in heads
            if e["id"] in report["by_source"].get(s, {}).get("judges", {})
        )
        rank = "probe" if e["role"] == "probe" else f"{e['rank']:>3}"
        print(f"{rank:>5}  {e['display_name']:<32} {metric} {value}{vs}  [{per}]")


def compare_judges(out: Path, a: str, b: str) -> str:
    """--compare: the paired differences A - B of every PAIRED_METRICS headline figure with
    their 95% intervals, from ``out``/paired_stats.npz (IntegrityError when it is missing or
    lacks a judge)."""
    stats = paired.read(out / paired.FILE)
    diffs = paired.difference(stats, a, b)
    pct = round(100 * stats.confidence)
    lines = [
        f"A = {a}, B = {b}: headline (mean over {', '.join(stats.headline)}), paired bootstrap "
        f"of {stats.resamples} trajectory resamples (seed {stats.seed})",
        f"{'metric':<20} {'A - B':>8}  {f'{pct}% interval':<18} significant",
    ]
    for m in PAIRED_METRICS:
        d = diffs.get(m) or {"value": None, "ci": [None, None]}
        spec = SPEC[m]
        ci = f"[{spec.format(d['ci'][0])}, {spec.format(d['ci'][1])}]"
        sig = paired.significance(d, spec.higher_is_better) or "–"
        lines.append(f"{spec.short:<20} {spec.format(d['value']):>8}  {ci:<18} {sig}")
    return "\n".join(lines)


def _write(report: dict[str, Any], stats: Any, out: Path) -> list[Path]:
    """Render every output into ``out``; a full disk, a refused permission or a read-only
    folder becomes one line naming the folder (``render_all`` stages every file first, so the
    previous tables stay as they were)."""
    try:
        with naming(out):
            return render_all(report, out, _binaries(stats))
    except OSError as e:
        if describe(e) is None:
            raise
        kept = (
            f"the tables already in {out} are unchanged (nothing is moved into place until "
            "every file is written)"
        )
        raise StorageError(sentence(e, saved=kept)) from None


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or --check) every leaderboard output, or --compare two judges."""
    args = _parser().parse_args(argv)
    setup_logging(args.quiet)
    check_rank_metric(args.metric)
    if args.compare:
        print(compare_judges(args.out, *args.compare))
        return 0
    if not args.ground_truth.is_file() and args.check:
        print(f"leaderboard --check: no ground truth at {args.ground_truth} yet; nothing to check")
        return 0
    rows, meta = load_ground_truth(args.ground_truth)
    if args.withhold_raw:
        changed = withhold_in_place(args.predictions, meta)
        for path, n in changed.items():
            log.info("withheld the raw output of %d decisions in %s", n, path)
        print(f"withheld raw outputs in {len(changed)} predictions files")
    report, stats = _report(args, rows, meta)
    if args.check:
        return _check(report, stats, args.out)
    written = _write(report, stats, args.out)
    log.info("wrote %d files under %s", len(written), args.out)
    if args.push_to_hub:
        return _publish(args, str(meta["dataset_version"]), meta)
    if not args.quiet:
        _summary(report, args.metric)
    return 0
