"""What every source adapter provides, and the records extraction produces besides trajectories."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.schema import Trajectory


@dataclass(frozen=True)
class UpstreamFile:
    """One pinned upstream file."""

    path: str
    """Path relative to the source folder (and to the upstream repository)."""
    sha256: str | None = None
    """Expected sha256 of its bytes, where known."""


@dataclass(frozen=True)
class Upstream:
    """Where a source comes from, pinned."""

    repo: str
    """Upstream repository URL."""
    commit: str
    """The commit the bytes correspond to."""
    files: tuple[UpstreamFile, ...] = ()
    """Files to fetch (relative paths), with hashes where known."""
    raw_url: str = ""
    """URL template for one file: ``{commit}`` and ``{path}`` are filled in."""


@dataclass(frozen=True)
class Reject:
    """A raw record that could not be converted: never dropped silently."""

    source: str
    """Adapter name."""
    file: str
    """File it came from, relative to the source folder."""
    position: int
    """0-based index of the record in that file (0 for one-record files)."""
    reason: str
    """What is wrong with it."""
    source_id: str = ""
    """Upstream id when it could be read."""


@dataclass(frozen=True)
class Exclusion:
    """An agent turn that yields no decision point, for a documented reason (e.g. null action)."""

    trajectory_id: str
    """The trajectory it belongs to."""
    turn: int
    """0-based turn index."""
    reason: str
    """Why it is not a decision point."""


@dataclass(frozen=True)
class Withheld:
    """A valid trajectory an adapter does not release yet, and why (a contrast pair still
    waiting for blind verification, or dropped by it): listed, never silently left out."""

    trajectory_id: str
    """The trajectory's id."""
    reason: str
    """Why it is held back."""


@dataclass
class ExtractResult:
    """Everything one adapter produced from one raw folder."""

    trajectories: list[Trajectory] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)


class Source(ABC):
    """A source adapter: reads one raw format from a folder into canonical trajectories."""

    name: str
    """Registry name, also the trajectory id prefix."""
    folder: str
    """Folder name under the raw-data root (``r-judge``, ``stepshield``, ...)."""
    license: str
    """Licence id of the data; 'none' when it may not be redistributed."""
    redistributable: bool
    """False when the data may only be evaluated locally (R-Judge)."""
    upstream: Upstream | None
    """Pinned upstream, or None for the project's own corpus."""
    defects: tuple[str, ...] = ()
    """Known defects from the source's documentation, for the dataset card (the build adds
    computed ones)."""
    diagnostic_subsets: tuple[str, ...] = ()
    """Subsets (``Trajectory.subset``) built as their own config ``<name>_<subset>`` and kept
    out of the leaderboard's headline: a diagnostic, not a measurement (StepShield's templated
    items)."""
    verified: bool = False
    """True when the adapter releases a trajectory only after blind verification recovered its
    gold (the contrast pairs): its labels count as reviewed."""
    headline: bool = False
    """True for a project corpus the leaderboard's macro headline averages beside the upstream
    sources (the contrast pairs); every upstream source is in the headline anyway."""

    @property
    def in_headline(self) -> bool:
        """Whether the macro headline averages this source."""
        return self.upstream is not None or self.headline

    def default_path(self, data_root: Path) -> Path:
        """This source's folder under a raw-data root."""
        return data_root / self.folder

    @abstractmethod
    def extract(self, path: Path) -> ExtractResult:
        """Read every raw record under ``path``. Malformed records become Rejects (with file,
        position and reason); documented non-decisions become Exclusions; nothing is dropped
        silently."""
