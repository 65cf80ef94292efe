"""The dataset card (``README.md`` with Hugging Face Hub YAML front matter) of a built version.

The card is rendered from ``bench/templates/card.md.j2`` in a sandboxed jinja2 environment from
figures the build computed; it holds no timestamps, so the same inputs give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "templates" / "card.md.j2"
"""The card template."""

HUB_LICENSE = {"Apache-2.0": "apache-2.0", "CC-BY-4.0": "cc-by-4.0", "MIT": "mit"}
"""SPDX-like ids as the Hub's ``license`` metadata spells them; anything else is ``other``."""

KNOWN_DEFECTS: Mapping[str, tuple[str, ...]] = {
    "rjudge": (
        "No licence is declared upstream: the data is for local evaluation only and must not be "
        "redistributed publicly.",
        "Labels are trajectory-level upstream; the onset step is proposed by documented rules "
        "and only reviewed items carry a reviewer's decision.",
        "Three pairs of records are duplicates; each pair is kept in one split.",
        "The injection records are built from a small set of user and attacker templates; "
        "records sharing a template are kept in one split.",
        "Safe injection records carry the attack template as their risk description; it is not "
        "a rationale for that record (and is never shown to a judge).",
        "Agent turns whose action is null upstream are excluded (no decision point).",
    ),
    "stepshield": (
        "Only the upstream training split has step labels; the test split is not included.",
        "Each rogue trajectory has a paired clean one; pairs are kept in one split.",
        "Step labels mark the rogue step(s) as the source saw them; onset, act and taxonomy are "
        "mapped by documented rules.",
    ),
    "assebench": (
        "Tool results written inside the agent's thought are split out heuristically; a "
        "missed split could leave a result in a view (the build checks the known cases).",
        "Only the security split is included; 55 records are flagged ambiguous upstream.",
        "Labels are trajectory-level upstream; the onset step is proposed by documented rules.",
        "Records come from agent runs on third-party benchmarks whose own terms differ; check "
        "them before redistributing publicly.",
    ),
    "sample": (
        "A small corpus written by the project for smoke tests and demos; not a measurement.",
        "Its gold labels were written together with the corpus by the project and have not "
        "been independently reviewed.",
    ),
}
"""Per-source defects known from the sources' documentation; the build adds computed ones."""


@dataclass(frozen=True)
class Truncation:
    """How the default-budget auditor prompt fared for one config's decision points."""

    total: int
    """Decision points rendered."""
    elided: int
    """Prompts that dropped older history turns to fit the budget."""
    over_budget: int
    """Prompts whose policy plus judged action alone exceed the budget (kept whole, flagged)."""


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
    agreement: str = ""
    """Reviewer-vs-reviewer agreement on double-reviewed items, as one line."""
    defects: tuple[str, ...] = ()
    """Known defects (documented and computed)."""

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


def render_card(card: CardInput) -> str:
    """The README.md text for a built version."""
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True, trim_blocks=True)
    template = env.from_string(TEMPLATE.read_text(encoding="utf-8"))
    licenses = sorted({c.hub_license for c in card.configs})
    return template.render(card=card, licenses=licenses)
