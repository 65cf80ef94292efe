"""``python bench/build.py``: proposals + reviews -> gold labels -> a frozen, versioned dataset.

Steps: load each source's extracted trajectories (the sample is extracted in-process when
``work/extract/sample`` is missing), its label proposals and every review (a review wins; two
conflicting reviews stop the build); validate (ids line up, values in vocabulary, one onset per
unsafe trajectory, no view leaks its own result, the judged action verbatim in every template's
prompt at the default budget); split dev/test (bench/splits.py); write
``data/build/<version>/`` (parquet DatasetDict per config, decision_points.jsonl, dataset card,
manifest) and the leaderboard's ground truth (ids and labels only). The version is a hash of the
trajectories, gold labels and splits, so the same inputs give the same version and bytes.

The pieces live in two modules: bench/gold.py (loading sources, proposals and reviews into gold
labels; the validation and render checks) and bench/export.py (parquet rows and Features, the
version folder, ground truth, card inputs, the SFT export). This file is the orchestration and
the CLI.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/build.py`: the repo root, not bench/, first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import logging  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from collections.abc import Iterable, Mapping, Sequence  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

from bench._script import run, setup_logging  # noqa: E402
from bench.errors import DataError, LeakError  # noqa: E402
from bench.export import (  # noqa: E402
    Record,
    meta_path,
    of_source,
    sft_records,
    write_ground_truth,
    write_version,
)
from bench.gold import (  # noqa: E402
    GoldSet,
    SourceData,
    Truncation,
    load_gold,
    load_source,
    natural_key,
    render_checks,
    trajectory_label,
    validate,
)
from bench.jsonl import canonical_json, content_hash, write_jsonl  # noqa: E402
from bench.paths import REPO_ROOT, work_dir  # noqa: E402
from bench.schema import ACTS, DecisionPoint, Split  # noqa: E402

__all__ = [
    "BUILD_DIR",
    "GROUND_TRUTH",
    "LABELS_DIR",
    "REAL_SOURCES",
    "REVIEWS_DIR",
    "BuildResult",
    "build",
    "dataset_version",
    "default_sources",
    "load_source",
    "main",
    "meta_path",
    "print_truncation",
]
"""What this module offers; ``load_source`` and ``meta_path`` are re-exported from bench/gold.py
and bench/export.py for callers that reach them through ``bench.build``."""

log = logging.getLogger(__name__)

REAL_SOURCES: tuple[str, ...] = ("rjudge", "stepshield", "assebench")
"""The upstream sources; ``sample`` is always built as well."""

LABELS_DIR = REPO_ROOT / "data" / "labels"
"""Committed label proposals, one file per source."""

REVIEWS_DIR = REPO_ROOT / "data" / "reviews"
"""Committed reviews, one file per reviewer."""

BUILD_DIR = REPO_ROOT / "data" / "build"
"""Where versions are written (git-ignored: it holds upstream text)."""

GROUND_TRUTH = REPO_ROOT / "leaderboards" / "ground_truth.jsonl"
"""The committed ground truth (its ``.meta.json`` sits beside it)."""


@dataclass(frozen=True)
class BuildResult:
    """What a build produced."""

    version: str
    """Dataset version."""
    path: Path
    """The version folder."""
    records: tuple[Record, ...]
    """Every record, in the stable output order."""
    truncation: Mapping[str, Mapping[str, Truncation]]
    """Source -> template -> figures."""
    sources: tuple[SourceData, ...] = field(default=())
    """The sources built."""
    gold: Mapping[str, GoldSet] = field(default_factory=dict)
    """Source -> gold set."""


# ---------------------------------------------------------------------------------------------
# the build


def dataset_version(
    sources: Sequence[SourceData],
    points: Mapping[str, Sequence[DecisionPoint]],
    splits: Mapping[str, Split],
    disputed: Iterable[str],
    dev_fraction: float,
    seed: int,
) -> str:
    """A hash of the canonical content: trajectories, gold labels, splits and disputes (not the
    code, not the rendered prompts). Same inputs, same version."""
    canon = {
        "sources": {
            s.name: {
                "license": s.license,
                "trajectories": sorted(t.content_hash() for t in s.trajectories),
                "labels": sorted(
                    canonical_json([p.id, asdict(p.gold) if p.gold else None])
                    for p in points[s.name]
                ),
            }
            for s in sorted(sources, key=lambda s: s.name)
        },
        "splits": sorted(splits.items()),
        "disputed": sorted(disputed),
        "dev_fraction": dev_fraction,
        "seed": seed,
    }
    return "v" + content_hash(canon, 12)


def build(
    names: Sequence[str],
    *,
    work: Path,
    out: Path = BUILD_DIR,
    labels_dir: Path = LABELS_DIR,
    reviews_dir: Path = REVIEWS_DIR,
    ground_truth: Path | None = GROUND_TRUTH,
    dev_fraction: float | None = None,
    seed: int | None = None,
) -> BuildResult:
    """Run the whole build; raises DataError / LeakError listing every problem found."""
    from bench import render, splits
    from bench.contract import load_vocab

    dev_fraction = splits.DEV_FRACTION if dev_fraction is None else dev_fraction
    seed = splits.SEED if seed is None else seed
    vocab = load_vocab()
    sources = [load_source(n, work) for n in sorted(set(names))]
    golds: dict[str, GoldSet] = {}
    points: dict[str, list[DecisionPoint]] = {}
    problems: list[str] = []
    for s in sources:
        golds[s.name] = load_gold(s, labels_dir, reviews_dir)
        pts, probs = validate(s, golds[s.name], vocab)
        points[s.name], problems = pts, problems + probs
    if problems:
        raise DataError(_problem_list("label validation", problems))

    templates = tuple(render.TEMPLATES)
    auditor: dict[str, tuple[dict[str, str], ...]] = {}
    auditor_trunc: dict[str, tuple[int, bool]] = {}
    truncation: dict[str, dict[str, Truncation]] = {}
    for s in sources:
        msgs, at, trunc, probs = render_checks(points[s.name], templates)
        auditor |= msgs
        auditor_trunc |= at
        truncation[s.name] = trunc
        problems += probs
    if problems:
        raise LeakError(_problem_list("prompt rendering", problems))

    all_trajs = [t for s in sources for t in s.trajectories]
    by_traj: dict[str, list[DecisionPoint]] = defaultdict(list)
    for s in sources:
        for p in points[s.name]:
            by_traj[p.trajectory_id].append(p)
    tlabel = {t.id: trajectory_label(t.id, by_traj[t.id]) for t in all_trajs}
    plan = splits.assign(all_trajs, tlabel, dev_fraction, seed)
    disputed = {tid for g in golds.values() for tid in g.disputed}
    version = dataset_version(sources, points, plan.assignment, disputed, dev_fraction, seed)

    traj_by_id = {t.id: t for t in all_trajs}
    records: list[Record] = []
    for s in sources:
        for p in points[s.name]:
            t = traj_by_id[p.trajectory_id]
            elided, over = auditor_trunc[p.id]
            records.append(
                Record(
                    point=p,
                    split=plan.assignment[p.trajectory_id],
                    disputed=p.trajectory_id in disputed,
                    messages=auditor[p.id],
                    elided=elided,
                    over_budget=over,
                    trajectory_label=tlabel[p.trajectory_id],
                    upstream_label=t.label or "",
                    scenario=t.scenario,
                    license=s.license,
                )
            )
    records.sort(key=lambda r: (r.point.source, natural_key(r.point.trajectory_id), r.point.k))
    final = write_version(out, version, sources, records, golds, truncation, plan, templates)
    if ground_truth is not None:
        write_ground_truth(ground_truth, version, sources, records, golds, dev_fraction, seed)
    return BuildResult(
        version=version,
        path=final,
        records=tuple(records),
        truncation=truncation,
        sources=tuple(sources),
        gold=golds,
    )


def _problem_list(stage: str, problems: Sequence[str], limit: int = 50) -> str:
    shown = "\n".join(f"  - {p}" for p in problems[:limit])
    more = f"\n  ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{stage} found {len(problems)} problem(s); fix them and rebuild:\n{shown}{more}"


# ---------------------------------------------------------------------------------------------
# CLI


def default_sources(work: Path, labels_dir: Path) -> list[str]:
    """The sample plus every real source that has both extracted trajectories and labels."""
    out = ["sample"]
    for name in REAL_SOURCES:
        if (work / "extract" / name / "trajectories.jsonl").is_file() and (
            labels_dir / f"{name}.jsonl"
        ).is_file():
            out.append(name)
    return out


def print_truncation(result: BuildResult) -> None:
    """The truncation table per source and template."""
    print("truncation at the default budget (prompts / history elided / over budget):")
    for source, per in result.truncation.items():
        cells = ", ".join(f"{n} {t.total}/{t.elided}/{t.over_budget}" for n, t in per.items())
        print(f"  {source:<11} {cells}")


def main(argv: list[str] | None = None) -> int:
    """Build the dataset; see the module docstring and docs/dataset.md."""
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
    ap.add_argument("--quiet", action="store_true", help="warnings and errors only")
    args = ap.parse_args(argv)
    setup_logging(args.quiet)
    work = work_dir(args.work)
    names = args.source or default_sources(work, args.labels)
    if "all" in names:
        names = ["sample", *REAL_SOURCES]
    if args.push_to_hub:
        # the licence gate runs before anything is built, so a refused push costs nothing
        from bench import sources as registry
        from bench.hub import check_publishable

        check_publishable({n: registry.get(n).license for n in names}, args.private)
    result = build(
        names,
        work=work,
        out=args.out,
        labels_dir=args.labels,
        reviews_dir=args.reviews,
        ground_truth=None if args.no_ground_truth else args.ground_truth,
    )
    n_dev = sum(r.split == "dev" for r in result.records)
    if not args.quiet:
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
        print_truncation(result)
        if not args.no_ground_truth:
            print(f"ground truth -> {args.ground_truth}")
    if args.export_sft:
        rows = sft_records(result.records, result.version)
        write_jsonl(args.export_sft, rows)
        if not args.quiet:
            print(f"sft export: {len(rows)} dev records -> {args.export_sft}")
    if args.push_to_hub:
        from bench.hub import push

        res = push(
            result.path,
            args.push_to_hub,
            private=args.private,
            licenses={s.name: s.license for s in result.sources},
            message=f"Foresight Bench dataset {result.version}",
        )
        print(f"pushed {result.version} to {res.repo} at revision {res.commit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
