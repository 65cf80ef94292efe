"""The build: proposals + reviews -> gold labels -> a frozen, versioned dataset.

Steps: load each source's extracted trajectories (the sample is extracted in-process when
``work/extract/sample`` is missing), its label proposals and every review (a review wins; two
conflicting reviews stop the build; ``bench.labelling.gold``); check them (``checks``: ids line
up, values in vocabulary, one onset per unsafe trajectory, no view leaks its own result, the
judged action verbatim in every template's prompt at the default budget); split dev/test
(``splits``): ``decide`` returns all of it as a typed ``Built``. Then ``version`` writes
``data/build/<version>/`` (parquet DatasetDict per config, decision_points.jsonl, dataset card,
manifest) and ``ground_truth`` the leaderboard's ground truth (ids and labels only). The version is a hash of the trajectories, gold labels and splits, so the same
inputs give the same version and bytes.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import sources as registry
from bench.core.errors import DataError, LeakError
from bench.core.ids import natural_key
from bench.core.jsonl import canonical_json, content_hash
from bench.core.paths import BUILD_DIR, GROUND_TRUTH, LABELS_DIR, REVIEWS_DIR, extracted
from bench.core.schema import DecisionPoint, Split, Trajectory, TrajectoryLabel
from bench.core.taxonomy import load_taxonomy
from bench.dataset import leakage, lite, splits, twins
from bench.dataset.checks import Truncation, render_checks, trajectory_label, validate
from bench.dataset.ground_truth import write_ground_truth
from bench.dataset.leakage import SourceLeakage
from bench.dataset.pairs_report import SOURCE as PAIRS_SOURCE
from bench.dataset.pairs_report import GateFn, pairs_report
from bench.dataset.records import Built, Record
from bench.dataset.version import write_version
from bench.labelling.gold import GoldSet, load_gold
from bench.prompts import renderer as render
from bench.sources.extraction import SourceData, load_source
from bench.sources.pair_files import PAIRS_DIR

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuildResult:
    """What a build produced: what it decided (``built``) and where it wrote it."""

    built: Built
    """The version, records, sources, gold sets, split, leakage and render figures."""
    path: Path
    """The version folder."""

    @property
    def version(self) -> str:
        """Dataset version."""
        return self.built.version

    @property
    def records(self) -> tuple[Record, ...]:
        """Every record, in the stable output order."""
        return self.built.records

    @property
    def truncation(self) -> Mapping[str, Mapping[str, Truncation]]:
        """Config -> template -> figures."""
        return self.built.truncation

    @property
    def sources(self) -> tuple[SourceData, ...]:
        """The sources built."""
        return self.built.sources

    @property
    def gold(self) -> Mapping[str, GoldSet]:
        """Source -> gold set."""
        return self.built.gold

    @property
    def plan(self) -> splits.SplitPlan:
        """The split, with its components and the soft links it could not keep whole."""
        return self.built.plan

    @property
    def leakage(self) -> tuple[SourceLeakage, ...]:
        """The leakage report per source."""
        return self.built.leakage


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
    gates: GateFn | None = None,
) -> BuildResult:
    """Run the whole build; raises DataError / LeakError listing every problem found.
    ``gates`` scores the shortcut probes on the contrast pairs for the card (the build command
    passes ``bench.judging.gates.probe_gates``)."""
    built = decide(
        names,
        work=work,
        labels_dir=labels_dir,
        reviews_dir=reviews_dir,
        dev_fraction=splits.DEV_FRACTION if dev_fraction is None else dev_fraction,
        seed=splits.SEED if seed is None else seed,
    )
    if any(s.name == PAIRS_SOURCE for s in built.sources):
        report = pairs_report(built.records, built.trajectories(), PAIRS_DIR, gates)
        built = replace(built, pairs=report.as_dict())
    final = write_version(out, built)
    if ground_truth is not None:
        write_ground_truth(ground_truth, built)
    return BuildResult(built=built, path=final)


def decide(
    names: Sequence[str],
    *,
    work: Path,
    labels_dir: Path,
    reviews_dir: Path,
    dev_fraction: float,
    seed: int,
) -> Built:
    """Everything the build decides, in order: gold labels, prompts, split, version, records."""
    sources = [load_source(n, work) for n in sorted(set(names))]
    golds, points = _gold_points(sources, labels_dir, reviews_dir)
    inputs = _Inputs(sources, points)
    auditor, auditor_trunc, truncation = _rendered(inputs.by_config())
    tlabel = {t.id: trajectory_label(t.id, inputs.by_trajectory[t.id]) for t in inputs.trajectories}
    plan = _split(inputs, tlabel, dev_fraction, seed)
    disputed = frozenset(tid for g in golds.values() for tid in g.disputed)
    version = dataset_version(sources, points, plan.assignment, disputed, dev_fraction, seed)
    records = [
        Record(
            point=p,
            split=plan.assignment[p.trajectory_id],
            disputed=p.trajectory_id in disputed,
            messages=auditor[p.id],
            elided=auditor_trunc[p.id][0],
            over_budget=auditor_trunc[p.id][1],
            trajectory_label=tlabel[p.trajectory_id],
            upstream_label=inputs.trajectory(p).label or "",
            scenario=inputs.trajectory(p).scenario,
            license=s.license,
            config=s.config_of(inputs.trajectory(p)),
            group=inputs.trajectory(p).group,
            pair=pair_marker(inputs.trajectory(p), p.k),
        )
        for s in sources
        for p in points[s.name]
    ]
    records = _with_lite(_with_twins(records), sources)
    return Built(
        version=version,
        sources=tuple(sources),
        records=tuple(records),
        gold=golds,
        truncation=truncation,
        plan=plan,
        leakage=tuple(leakage.report(inputs.trajectories, plan.assignment)),
        templates=tuple(render.TEMPLATES),
        lite_rule=lite.rule(),
    )


class _Inputs:
    """The sources' trajectories and gold decision points, indexed the ways the build reads them."""

    def __init__(
        self, sources: Sequence[SourceData], points: Mapping[str, Sequence[DecisionPoint]]
    ) -> None:
        self.sources = {s.name: s for s in sources}
        self.trajectories = [t for s in sources for t in s.trajectories]
        self._by_id = {t.id: t for t in self.trajectories}
        self.points = [p for s in sources for p in points[s.name]]
        self.by_trajectory: dict[str, list[DecisionPoint]] = defaultdict(list)
        for p in self.points:
            self.by_trajectory[p.trajectory_id].append(p)

    def trajectory(self, p: DecisionPoint) -> Trajectory:
        """The trajectory a point belongs to."""
        return self._by_id[p.trajectory_id]

    def config_of(self, t: Trajectory) -> str:
        """The config a trajectory is built into."""
        return self.sources[t.source].config_of(t)

    def stratum_of(self, t: Trajectory) -> str:
        """The split's stratum: the config, refined by ``metadata["stratum"]`` where an adapter
        sets one (a contrast pair's domain and clue kind)."""
        extra = t.metadata.get("stratum") if t.metadata else None
        return f"{self.config_of(t)}/{extra}" if extra else self.config_of(t)

    def by_config(self) -> dict[str, list[DecisionPoint]]:
        """Config -> its decision points, in source order."""
        out: dict[str, list[DecisionPoint]] = defaultdict(list)
        for p in self.points:
            out[self.config_of(self.trajectory(p))].append(p)
        return out


def _split(
    inputs: _Inputs, tlabel: Mapping[str, TrajectoryLabel], dev_fraction: float, seed: int
) -> splits.SplitPlan:
    """The grouped, stratified dev/test split; DataError when a grouped link crosses it."""
    trajs = inputs.trajectories
    plan = splits.assign(trajs, tlabel, dev_fraction, seed, stratum=inputs.stratum_of)
    crossing = splits.crossing_links(trajs, plan.assignment)
    if crossing:
        raise DataError(_problem_list("the split (a grouped link crosses dev and test)", crossing))
    return plan


def pair_marker(t: Trajectory, k: int) -> dict[str, Any] | None:
    """What the ground truth records at a contrast pair's judged point (``Record.pair``)."""
    pair = t.metadata.get("pair") if t.metadata else None
    if not isinstance(pair, Mapping) or pair.get("k") != k:
        return None
    return {key: pair[key] for key in ("id", "side", "clue_kind", "distance", "bucket")}


def _with_twins(records: list[Record]) -> list[Record]:
    """Records in the stable output order, each unsafe onset linked to its safe twin's step."""
    records = sorted(
        records, key=lambda r: (r.point.source, natural_key(r.point.trajectory_id), r.point.k)
    )
    twin_of = {p.onset: p for p in twins.pairs(records)}
    return [
        replace(r, twin=twin_of[r.point.id].twin, twin_similarity=twin_of[r.point.id].similarity)
        if r.point.id in twin_of
        else r
        for r in records
    ]


def _with_lite(records: list[Record], sources: Sequence[SourceData]) -> list[Record]:
    """Records with the lite split marked (test records of the chosen trajectories)."""
    headline = [s.name for s in sources if s.headline] or [s.name for s in sources]
    lite_ids = lite.lite_trajectories(records, headline)
    return [
        replace(r, lite=True) if r.split == "test" and r.point.trajectory_id in lite_ids else r
        for r in records
    ]


def _problem_list(stage: str, problems: Sequence[str], limit: int = 50) -> str:
    shown = "\n".join(f"  - {p}" for p in problems[:limit])
    more = f"\n  ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{stage} found {len(problems)} problem(s); fix them and rebuild:\n{shown}{more}"


def default_sources(work: Path, labels_dir: Path) -> list[str]:
    """The project's own corpora (the sample, the contrast pairs) plus every upstream source that
    has both extracted trajectories and labels."""
    out = list(registry.embedded_names())
    for name in registry.upstream_names():
        if extracted(work, name).is_file() and (labels_dir / f"{name}.jsonl").is_file():
            out.append(name)
    return out
