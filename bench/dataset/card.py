"""The dataset card (``README.md`` with Hugging Face Hub YAML front matter) of a built version.

The card is rendered from ``bench/templates/card.md.j2`` in a sandboxed jinja2 environment from
figures the build computed; it holds no timestamps, so the same inputs give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.core.paths import CARD_TEMPLATE
from bench.dataset.checks import Truncation
from bench.dataset.leakage import NEAR_DUPLICATE, SourceLeakage

TEMPLATE = CARD_TEMPLATE
"""The card template."""

HUB_LICENSE = {"Apache-2.0": "apache-2.0", "CC-BY-4.0": "cc-by-4.0", "MIT": "mit"}
"""SPDX-like ids as the Hub's ``license`` metadata spells them; anything else is ``other``."""


@dataclass(frozen=True)
class ConfigStats:
    """Figures for one config (one source) of a built version."""

    name: str
    """Config name (the source)."""
    license: str
    """Licence id of the source; ``none`` = not redistributable."""
    redistributable: bool
    """False when the data may only be evaluated locally."""
    trajectories: Mapping[str, int]
    """Split -> trajectories."""
    points: Mapping[str, int]
    """Split -> decision points."""
    acts: Mapping[str, Mapping[str, int]]
    """Split -> act -> decision points."""
    trajectory_labels: Mapping[str, Mapping[str, int]]
    """Split -> safe/unsafe -> trajectories (gold)."""
    reviewed: int
    """Trajectories whose labels a review (or adjudication) decided."""
    disputed: int
    """Trajectories whose upstream label a reviewer disputed."""
    truncation: Mapping[str, Truncation]
    """Template -> truncation figures at the default budget."""
    disputed_notes: tuple[tuple[str, str], ...] = ()
    """(trajectory id, the deciding reviewer's note) for every disputed trajectory."""
    reviewers: tuple[str, ...] = ()
    """Everyone whose review or adjudication touched this config."""
    moved: int = 0
    """Reviewed unsafe trajectories whose onset the review moved from the proposal's."""
    upstream: bool = True
    """A published upstream source; False for the project's own corpora."""
    headline: bool = True
    """The leaderboard's macro headline averages this config (the upstream sources and the
    contrast pairs; never a diagnostic config or the sample)."""
    agreement: str = ""
    """Reviewer-vs-reviewer agreement on double-reviewed items, as one line."""
    defects: tuple[str, ...] = ()
    """Known defects (documented and computed)."""
    subsets: Mapping[str, int] = field(default_factory=dict)
    """Subset (``Trajectory.subset``) -> trajectories."""
    levels: Mapping[str, int] = field(default_factory=dict)
    """Level (``Trajectory.level``) -> trajectories."""
    diagnostic: bool = False
    """True for a diagnostic config (a source's templated subset): never in the headline."""

    @property
    def total_trajectories(self) -> int:
        """Trajectories over both splits."""
        return sum(self.trajectories.values())

    @property
    def hub_license(self) -> str:
        """The licence as the Hub spells it."""
        return HUB_LICENSE.get(self.license, "other")


@dataclass(frozen=True)
class CardInput:
    """Everything the card shows."""

    version: str
    """Dataset version."""
    configs: tuple[ConfigStats, ...]
    """One entry per config, in output order."""
    dev_fraction: float
    """Share of trajectories in dev."""
    seed: int
    """Split seed."""
    budget: str
    """The renderer's default history budget, as text."""
    templates: tuple[str, ...]
    """Prompt templates every record was checked against."""
    data_files: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Config -> split -> parquet path inside the version folder."""
    leakage: tuple[SourceLeakage, ...] = ()
    """The build's leakage report, per source."""
    soft_joined: tuple[str, ...] = ()
    """Soft links the split kept whole."""
    soft_crossing: tuple[str, ...] = ()
    """Soft links the split could not keep whole (they cross dev and test)."""
    lite: tuple[tuple[str, str, int, int, int], ...] = ()
    """The lite split per (source, subset): trajectories, decision points, unsafe trajectories."""
    lite_rule: Mapping[str, int] = field(default_factory=dict)
    """Its parameters (seed, points per source, minimum unsafe trajectories)."""
    pairs: Mapping[str, Any] | None = None
    """The contrast pairs' figures (``bench.dataset.pairs_report``), when built."""


def render_card(card: CardInput) -> str:
    """The README.md text for a built version."""
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True, trim_blocks=True)
    template = env.from_string(TEMPLATE.read_text(encoding="utf-8"))
    licenses = sorted({c.hub_license for c in card.configs})
    return template.render(card=card, licenses=licenses, near_duplicate=NEAR_DUPLICATE)
