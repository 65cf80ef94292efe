"""The records of a build, and everything the build decided before a file is written.

A ``Record`` is one decision point with its gold label, split, auditor prompt and trajectory facts;
``Built`` carries every record with the sources, gold sets, split plan and checks' figures that
the writers read: ``bench.dataset.version`` (the version folder), ``bench.dataset.ground_truth``
(the leaderboard's ground truth) and ``bench.dataset.sft`` (the training export). Nothing here
decides a label: every record arrives with its gold, split and auditor prompt filled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.core.schema import DecisionPoint, Split, Trajectory, TrajectoryLabel
from bench.dataset.checks import Truncation
from bench.dataset.leakage import SourceLeakage
from bench.dataset.splits import SplitPlan
from bench.labelling.gold import GoldSet
from bench.sources.extraction import SourceData

SPLITS: tuple[Split, ...] = ("dev", "test")
"""The splits every config is written with, in output order."""


@dataclass(frozen=True)
class Record:
    """One built decision point with its split and auditor prompt."""

    point: DecisionPoint
    """The decision point, gold filled."""
    split: Split
    """dev or test."""
    disputed: bool
    """The trajectory's upstream label is disputed."""
    messages: tuple[dict[str, str], ...]
    """The auditor prompt at the default budget."""
    elided: int
    """History turns the auditor prompt elided."""
    over_budget: bool
    """The auditor prompt is over budget."""
    trajectory_label: TrajectoryLabel
    """Gold trajectory label (unsafe when the trajectory has an onset)."""
    upstream_label: str
    """The source's own trajectory label ('' when it has none)."""
    scenario: str
    """The trajectory's scenario."""
    license: str
    """The source licence."""
    config: str = ""
    """The config it is built into: its source, or ``<source>_<subset>`` for a diagnostic
    subset (StepShield's templated items, kept out of the headline)."""
    group: str = ""
    """The trajectory's grouping key (a StepShield ROGUE/CLEAN pair shares it)."""
    twin: str = ""
    """For an unsafe trajectory's onset step: its safe twin's step at the same k (twins.py)."""
    twin_similarity: float | None = None
    """TF-IDF cosine of the onset action and the twin's action."""
    lite: bool = False
    """Part of the lite split (``bench.dataset.lite``): a test record of a chosen trajectory."""
    pair: Mapping[str, Any] | None = None
    """At a contrast pair's judged point k*: the pair id, the side (A or B), the clue kind, its
    distance and bucket (docs/pairs.md); None elsewhere."""


def of_source(records: Iterable[Record], source: str) -> list[Record]:
    """The records of one source, in their given order."""
    return [r for r in records if r.point.source == source]


def of_config(records: Iterable[Record], config: str) -> list[Record]:
    """The records of one config, in their given order."""
    return [r for r in records if (r.config or r.point.source) == config]


def configs(records: Iterable[Record]) -> list[str]:
    """Every config of ``records``, sorted."""
    return sorted({r.config or r.point.source for r in records})


@dataclass(frozen=True)
class Built:
    """What a build decided, before anything is written."""

    version: str
    """Dataset version (``bench.dataset.builder.dataset_version``)."""
    sources: tuple[SourceData, ...]
    """The sources built, sorted by name."""
    records: tuple[Record, ...]
    """Every record, in the stable output order."""
    gold: Mapping[str, GoldSet]
    """Source -> gold set."""
    truncation: Mapping[str, Mapping[str, Truncation]]
    """Config -> template -> render figures at the default budget."""
    plan: SplitPlan
    """The split, with its components and the soft links it could not keep whole."""
    leakage: tuple[SourceLeakage, ...]
    """The leakage report per source."""
    templates: tuple[str, ...]
    """The prompt templates every record was checked in."""
    lite_rule: Mapping[str, int]
    """How the lite split was drawn (seed, points per source)."""
    pairs: Mapping[str, Any] | None = None
    """The contrast pairs' verification, coverage and gates (``bench.dataset.pairs_report``),
    when the pairs are built."""

    def trajectories(self) -> list[Trajectory]:
        """Every built trajectory, source by source."""
        return [t for s in self.sources for t in s.trajectories]

    def source_of(self, config: str) -> SourceData:
        """The source a config was built from."""
        name = of_config(self.records, config)[0].point.source
        return next(s for s in self.sources if s.name == name)
