"""Running an adapter: raw folder in, canonical trajectories and decision points out, and
reading them back.

``extract_source`` runs one adapter over its raw folder and writes, under
``<work>/extract/<source>/``: ``trajectories.jsonl``, ``decision_points.jsonl``,
``rejects.jsonl``, ``exclusions.jsonl`` and ``summary.json`` (docs/FORMATS.md). Every agent
turn is accounted for: it is a decision point or a documented exclusion, and a malformed raw
record is a reject with its reason. ``load_trajectories`` and ``load_source`` read the result
back (the sample corpus is extracted in-process when it was never extracted, so it builds on a
fresh clone).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import sources
from bench.core.errors import DataError, IntegrityError
from bench.core.ids import natural_key
from bench.core.jsonl import read_jsonl, sha256_file, write_jsonl
from bench.core.paths import DATA_DIR, data_root, extracted
from bench.core.schema import Trajectory, decision_points
from bench.sources.base import ExtractResult, Source

log = logging.getLogger(__name__)

PROGRESS_MIN = 200
"""Show a progress bar from this many trajectories on (unless quiet)."""


@dataclass(frozen=True)
class Summary:
    """What one extraction produced (written to summary.json and printed)."""

    source: str
    """Adapter name."""
    path: str
    """Raw folder read."""
    trajectories: int
    """Trajectories written."""
    decision_points: int
    """Decision points written (one per agent action)."""
    agent_actions: int
    """Agent turns seen: decision points plus exclusions."""
    safe: int
    """Trajectories labelled safe upstream."""
    unsafe: int
    """Trajectories labelled unsafe upstream."""
    unlabelled: int
    """Trajectories without an upstream label."""
    rejects: int
    """Raw records that could not be converted (see rejects.jsonl)."""
    exclusions: int
    """Agent turns with no decision point, with reasons (see exclusions.jsonl)."""
    trajectories_sha256: str
    """sha256 of trajectories.jsonl."""
    upstream_commit: str | None
    """The pinned upstream commit, None for the project's own corpus."""
    seconds: float
    """Wall time of the extraction."""

    def line(self) -> str:
        """The one-line summary printed per source."""
        return (
            f"{self.source}: {self.trajectories} trajectories, {self.decision_points} decision "
            f"points ({self.agent_actions} agent actions, {self.exclusions} exclusions), "
            f"{self.safe} safe / {self.unsafe} unsafe"
            + (f" / {self.unlabelled} unlabelled" if self.unlabelled else "")
            + f", {self.rejects} rejects [{self.seconds:.1f}s]"
        )


def resolve_path(src: Source, explicit: str | None, n_sources: int) -> Path:
    """The raw folder for ``src``. ``--path`` names the source's folder (or a root holding it)
    when one source is extracted, and a root holding every source's folder otherwise. Without
    it: the project's own corpus lives in ``data/``, upstream data under ``data_root()``."""
    if explicit:
        p = Path(explicit)
        if n_sources > 1 or (p / src.folder).is_dir():
            return p / src.folder
        return p
    if src.upstream is None:
        return src.default_path(DATA_DIR)
    return src.default_path(data_root())


def extract_source(
    src: Source, path: Path, out_dir: Path, *, quiet: bool = False, t0: float | None = None
) -> Summary:
    """Run one adapter over ``path`` and write its five output files under ``out_dir``."""
    t0 = time.perf_counter() if t0 is None else t0
    if not path.exists():
        raise DataError(
            f"{src.name}: raw folder {path} does not exist; pass --path, set "
            "FORESIGHT_DATA, or add --download"
        )
    res = src.extract(path)
    _check_accounting(src.name, res)
    out_dir.mkdir(parents=True, exist_ok=True)
    trajs = sorted(res.trajectories, key=lambda t: t.id)
    traj_file = out_dir / "trajectories.jsonl"
    write_jsonl(traj_file, (t.to_dict() for t in trajs))
    n_dp = write_jsonl(
        out_dir / "decision_points.jsonl",
        (dp.to_dict() for t in _progress(trajs, src.name, quiet) for dp in decision_points(t)),
    )
    write_jsonl(out_dir / "rejects.jsonl", (asdict(r) for r in res.rejects))
    write_jsonl(out_dir / "exclusions.jsonl", (asdict(e) for e in res.exclusions))
    labels = [t.label for t in trajs]
    summary = Summary(
        source=src.name,
        path=str(path),
        trajectories=len(trajs),
        decision_points=n_dp,
        agent_actions=n_dp + len(res.exclusions),
        safe=labels.count("safe"),
        unsafe=labels.count("unsafe"),
        unlabelled=sum(1 for x in labels if x is None),
        rejects=len(res.rejects),
        exclusions=len(res.exclusions),
        trajectories_sha256=sha256_file(traj_file),
        upstream_commit=src.upstream.commit if src.upstream else None,
        seconds=round(time.perf_counter() - t0, 3),
    )
    tmp = out_dir / "summary.json.tmp"
    tmp.write_text(json.dumps(asdict(summary), indent=2) + "\n", encoding="utf-8")
    tmp.replace(out_dir / "summary.json")
    for r in res.rejects:
        log.warning("%s: reject %s#%d: %s", src.name, r.file, r.position, r.reason)
    return summary


def _check_accounting(name: str, res: ExtractResult) -> None:
    """Every agent turn is a decision point or an exclusion: nothing vanishes silently."""
    agent_turns = sum(1 for t in res.trajectories for x in t.turns if x.role == "agent")
    actions = sum(1 for t in res.trajectories for x in t.turns if x.is_action)
    if agent_turns != actions + len(res.exclusions):
        raise IntegrityError(
            f"{name}: {agent_turns} agent turns but {actions} actions + {len(res.exclusions)} "
            "exclusions; the adapter dropped or double-counted a turn: fix the adapter"
        )


def _progress(items: list[Any], name: str, quiet: bool) -> Iterator[Any]:
    if quiet or len(items) < PROGRESS_MIN:
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, desc=f"{name} decision points", unit="traj", leave=False)


# ------------------------------------------------------------------------------ reading back


@dataclass(frozen=True)
class SourceData:
    """One source's extracted trajectories and what may be done with them."""

    name: str
    """Adapter name (= config name)."""
    license: str
    """Licence id; 'none' = not redistributable."""
    redistributable: bool
    """False when the data may only be evaluated locally."""
    trajectories: tuple[Trajectory, ...]
    """Extracted trajectories, in natural id order."""
    defects: tuple[str, ...] = ()
    """The adapter's documented defects (for the dataset card)."""


def load_trajectories(path: Path) -> list[Trajectory]:
    """Trajectories from an extraction file; DataError saying how to make it when missing."""
    if not path.is_file():
        source = path.parent.name
        raise DataError(f"{path} not found: run `python bench/extract.py --source {source}` first")
    return [Trajectory.from_dict(d) for d in read_jsonl(path)]


def load_source(name: str, work: Path, raw_path: Path | None = None) -> SourceData:
    """A source's extracted trajectories from ``<work>/extract/<name>/trajectories.jsonl``; a
    source without raw data of its own (the sample corpus) is extracted in-process when that
    file is missing."""
    adapter = sources.get(name)
    path = extracted(work, name)
    if path.is_file():
        trajs = load_trajectories(path)
    elif adapter.upstream is None:
        result = adapter.extract(raw_path or adapter.default_path(DATA_DIR))
        if result.rejects:
            raise DataError(
                f"the {name} corpus has {len(result.rejects)} malformed line(s) (first: "
                f"{result.rejects[0].reason}); run `python bench/extract.py --source {name}`"
            )
        trajs = result.trajectories
    else:
        raise DataError(
            f"no extracted trajectories for {name} at {path}: run "
            f"`python bench/extract.py --source {name}` first (FORESIGHT_DATA names the raw data)"
        )
    trajs.sort(key=lambda t: natural_key(t.id))
    return SourceData(
        name=name,
        license=adapter.license,
        redistributable=adapter.redistributable,
        trajectories=tuple(trajs),
        defects=tuple(adapter.defects),
    )
