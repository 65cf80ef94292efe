"""The build: proposals + reviews -> gold labels -> a frozen, versioned dataset.

Steps: load each source's extracted trajectories (the sample is extracted in-process when
``work/extract/sample`` is missing), its label proposals and every review (a review wins; two
conflicting reviews stop the build; ``bench.labelling.gold``); check them (``checks``: ids line
up, values in vocabulary, one onset per unsafe trajectory, no view leaks its own result, the
judged action verbatim in every template's prompt at the default budget); split dev/test
(``splits``); write ``data/build/<version>/`` (``export``: parquet DatasetDict per config,
decision_points.jsonl, dataset card, manifest) and the leaderboard's ground truth (ids and
labels only). The version is a hash of the trajectories, gold labels and splits, so the same
inputs give the same version and bytes.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from bench import sources as registry
from bench.core.errors import DataError, LeakError
from bench.core.ids import natural_key
from bench.core.jsonl import canonical_json, content_hash
from bench.core.paths import BUILD_DIR, GROUND_TRUTH, LABELS_DIR, REVIEWS_DIR, extracted
from bench.core.schema import DecisionPoint, Split, Trajectory
from bench.core.taxonomy import load_taxonomy
from bench.dataset import leakage, lite, splits, twins
from bench.dataset.checks import Truncation, render_checks, trajectory_label, validate
from bench.dataset.export import Record, write_ground_truth, write_version
from bench.dataset.leakage import SourceLeakage
from bench.labelling.gold import GoldSet, load_gold
from bench.prompts import renderer as render
from bench.sources.extraction import SourceData, load_source

log = logging.getLogger(__name__)


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
    """Config -> template -> figures."""
    sources: tuple[SourceData, ...] = field(default=())
    """The sources built."""
    gold: Mapping[str, GoldSet] = field(default_factory=dict)
    """Source -> gold set."""
    plan: splits.SplitPlan | None = None
    """The split, with its components and the soft links it could not keep whole."""
    leakage: tuple[SourceLeakage, ...] = ()
    """The leakage report per source."""


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


def _gold_points(
    sources: Sequence[SourceData], labels_dir: Path, reviews_dir: Path
) -> tuple[dict[str, GoldSet], dict[str, list[DecisionPoint]]]:
    """Every source's gold set and decision points with gold attached; DataError listing every
    label problem."""
    vocab = load_taxonomy()
    golds: dict[str, GoldSet] = {}
    points: dict[str, list[DecisionPoint]] = {}
    problems: list[str] = []
    for s in sources:
        golds[s.name] = load_gold(s, labels_dir, reviews_dir)
        pts, probs = validate(s, golds[s.name], vocab)
        points[s.name], problems = pts, problems + probs
    if problems:
        raise DataError(_problem_list("label validation", problems))
    return golds, points


def _rendered(
    by_config: Mapping[str, Sequence[DecisionPoint]],
) -> tuple[
    dict[str, tuple[dict[str, str], ...]],
    dict[str, tuple[int, bool]],
    dict[str, dict[str, Truncation]],
]:
    """(auditor prompt per id, its (elided, over budget), truncation per config and template);
    LeakError when a template lost a judged action."""
    auditor: dict[str, tuple[dict[str, str], ...]] = {}
    auditor_trunc: dict[str, tuple[int, bool]] = {}
    truncation: dict[str, dict[str, Truncation]] = {}
    problems: list[str] = []
    for config, pts in sorted(by_config.items()):
        msgs, at, trunc, probs = render_checks(pts, tuple(render.TEMPLATES))
        auditor |= msgs
        auditor_trunc |= at
        truncation[config] = trunc
        problems += probs
    if problems:
        raise LeakError(_problem_list("prompt rendering", problems))
    return auditor, auditor_trunc, truncation


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
    dev_fraction = splits.DEV_FRACTION if dev_fraction is None else dev_fraction
    seed = splits.SEED if seed is None else seed
    sources = [load_source(n, work) for n in sorted(set(names))]
    golds, points = _gold_points(sources, labels_dir, reviews_dir)
    all_trajs = [t for s in sources for t in s.trajectories]
    src_of = {s.name: s for s in sources}
    traj_by_id = {t.id: t for t in all_trajs}

    def config_of(t: Trajectory) -> str:
        return src_of[t.source].config_of(t)

    by_config: dict[str, list[DecisionPoint]] = defaultdict(list)
    by_traj: dict[str, list[DecisionPoint]] = defaultdict(list)
    for s in sources:
        for p in points[s.name]:
            by_traj[p.trajectory_id].append(p)
            by_config[config_of(traj_by_id[p.trajectory_id])].append(p)
    auditor, auditor_trunc, truncation = _rendered(by_config)
    tlabel = {t.id: trajectory_label(t.id, by_traj[t.id]) for t in all_trajs}

    plan = splits.assign(all_trajs, tlabel, dev_fraction, seed, stratum=config_of)
    crossing = splits.crossing_links(all_trajs, plan.assignment)
    if crossing:
        raise DataError(_problem_list("the split (a grouped link crosses dev and test)", crossing))
    leaks = leakage.report(all_trajs, plan.assignment)
    disputed = {tid for g in golds.values() for tid in g.disputed}
    version = dataset_version(sources, points, plan.assignment, disputed, dev_fraction, seed)

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
                    config=s.config_of(t),
                    group=t.group,
                )
            )
    records.sort(key=lambda r: (r.point.source, natural_key(r.point.trajectory_id), r.point.k))
    twin_of = {p.onset: p for p in twins.pairs(records)}
    records = [
        replace(r, twin=twin_of[r.point.id].twin, twin_similarity=twin_of[r.point.id].similarity)
        if r.point.id in twin_of
        else r
        for r in records
    ]
    headline = [s.name for s in sources if s.upstream] or [s.name for s in sources]
    lite_ids = lite.lite_trajectories(records, headline)
    records = [
        replace(r, lite=True) if r.split == "test" and r.point.trajectory_id in lite_ids else r
        for r in records
    ]
    templates = tuple(render.TEMPLATES)
    final = write_version(
        out, version, sources, records, golds, truncation, plan, templates, leaks, lite.rule()
    )
    if ground_truth is not None:
        write_ground_truth(
            ground_truth, version, sources, records, golds, dev_fraction, seed, lite.rule()
        )
    return BuildResult(
        version=version,
        path=final,
        records=tuple(records),
        truncation=truncation,
        sources=tuple(sources),
        gold=golds,
        plan=plan,
        leakage=tuple(leaks),
    )


def _problem_list(stage: str, problems: Sequence[str], limit: int = 50) -> str:
    shown = "\n".join(f"  - {p}" for p in problems[:limit])
    more = f"\n  ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{stage} found {len(problems)} problem(s); fix them and rebuild:\n{shown}{more}"


def default_sources(work: Path, labels_dir: Path) -> list[str]:
    """The sample plus every upstream source that has both extracted trajectories and labels."""
    out = ["sample"]
    for name in registry.upstream_names():
        if extracted(work, name).is_file() and (labels_dir / f"{name}.jsonl").is_file():
            out.append(name)
    return out
