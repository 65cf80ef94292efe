"""Running an adapter: raw folder in, canonical trajectories and decision points out, and
reading them back.

``extract_source`` runs one adapter over its raw folder and writes, under
``<work>/extract/<source>/``: ``trajectories.jsonl``, ``decision_points.jsonl``,
``rejects.jsonl``, ``exclusions.jsonl``, ``withheld.jsonl`` and ``summary.json``
(docs/FORMATS.md). Every agent turn is accounted for: it is a decision point or a documented exclusion, and a malformed raw
record is a reject with its reason. ``load_trajectories`` and ``load_source`` read the result
back (the sample corpus is extracted in-process when it was never extracted, so it builds on a
fresh clone).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import sources
from bench.core.errors import DataError, IntegrityError
from bench.core.ids import natural_key
from bench.core.jsonl import clean_text, read_jsonl, sha256_file, write_jsonl
from bench.core.paths import DATA_DIR, data_root, extracted
from bench.core.schema import Trajectory, decision_points
from bench.sources.base import ExtractResult, Reject, Source

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
    pins: str = "no pins"
    """``verified`` (every pinned file present with its sha256), ``unverified (N files differ)``
    or ``no pins`` (the project's own corpus)."""
    pin_mismatches: tuple[str, ...] = ()
    """Pinned files that are missing or whose sha256 differs (at most 20 listed)."""
    withheld: int = 0
    """Valid trajectories the adapter holds back, with reasons (see withheld.jsonl): contrast
    pairs not (yet) kept by blind verification."""

    def line(self) -> str:
        """The one-line summary printed per source."""
        return (
            f"{self.source}: {self.trajectories} trajectories, {self.decision_points} decision "
            f"points ({self.agent_actions} agent actions, {self.exclusions} exclusions), "
            f"{self.safe} safe / {self.unsafe} unsafe"
            + (f" / {self.unlabelled} unlabelled" if self.unlabelled else "")
            + f", {self.rejects} rejects"
            + (f", {self.withheld} withheld" if self.withheld else "")
            + (f"; pinned {self.upstream_commit[:7]}, {self.pins}" if self.upstream_commit else "")
            + f" [{self.seconds:.1f}s]"
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


MAX_TEXT_CHARS = 200_000
"""Longest text field (an action, a thought, an observation, a turn, the policy) a record may
carry; a longer one is a reject. The longest whole prompt of the real sources is about 16,000
characters, so only a broken or hostile record reaches this; it would otherwise make a prompt of
its own size."""


def bad_text(obj: Any, where: str) -> str | None:
    """Why a record's value cannot be stored (a lone surrogate UTF-8 cannot encode, a text over
    MAX_TEXT_CHARS), naming the field; None when it can."""
    if isinstance(obj, str):
        if len(obj) > MAX_TEXT_CHARS:
            return f"{where} is {len(obj):,} characters; the cap is {MAX_TEXT_CHARS:,}"
        if clean_text(obj)[1]:
            return (
                f"{where} holds an invalid Unicode code point (a lone surrogate such as "
                "\\ud800) that UTF-8 cannot store"
            )
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            why = bad_text(k, f"{where} key") or bad_text(v, f"{where}.{k}" if where else str(k))
            if why:
                return why
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            why = bad_text(v, f"{where}[{i}]")
            if why:
                return why
    return None


def screen(name: str, res: ExtractResult) -> ExtractResult:
    """``res`` with every trajectory that cannot be stored moved to the rejects (with the field
    and the reason), and its exclusions with it: one bad record never stops an extraction and
    is never dropped silently."""
    keep, rejects = [], list(res.rejects)
    dropped: set[str] = set()
    for t in res.trajectories:
        why = bad_text(t.to_dict(), "")
        if why is None:
            keep.append(t)
            continue
        meta = t.metadata or {}
        pos = meta.get("position", 0)
        rejects.append(
            Reject(
                name,
                str(meta.get("file", "")),
                pos if isinstance(pos, int) else 0,
                why,
                t.source_id,
            )
        )
        dropped.add(t.id)
    exclusions = [e for e in res.exclusions if e.trajectory_id not in dropped]
    return ExtractResult(
        trajectories=keep, rejects=rejects, exclusions=exclusions, withheld=list(res.withheld)
    )


@dataclass(frozen=True)
class PinCheck:
    """The local raw files against a source's pins."""

    verified: bool
    """True when every pinned file is present with its pinned sha256."""
    differ: tuple[str, ...]
    """Pinned files missing or with another sha256."""

    def describe(self) -> str:
        """``verified`` or ``unverified (N files differ)``."""
        return "verified" if self.verified else f"unverified ({len(self.differ)} files differ)"


def verify_pins(src: Source, path: Path) -> PinCheck | None:
    """Check every pinned file under ``path`` against its sha256 (None: the source has no
    pins)."""
    if src.upstream is None or not src.upstream.files:
        return None
    differ = []
    for f in src.upstream.files:
        target = path / f.path
        if not target.is_file() or (f.sha256 and sha256_file(target) != f.sha256):
            differ.append(f.path)
    return PinCheck(not differ, tuple(differ))


def _previous_count(out_dir: Path) -> int | None:
    try:
        return int(
            json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))["trajectories"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _refuse_shrink(src: Source, path: Path, out_dir: Path, res: ExtractResult) -> None:
    n = len(res.trajectories)
    before = _previous_count(out_dir)
    first = (
        f" (first reject: {res.rejects[0].file}: {res.rejects[0].reason})" if res.rejects else ""
    )
    if n == 0:
        raise DataError(
            f"{src.name}: no trajectories extracted from {path}, {len(res.rejects)} rejects{first}; "
            f"is a raw file truncated or empty? Nothing was written (any previous output in "
            f"{out_dir} is kept); pass --allow-fewer to write it anyway"
        )
    if before is not None and n < before:
        raise DataError(
            f"{src.name}: {n} trajectories extracted from {path}, the previous extraction in "
            f"{out_dir} has {before}{first}; is a raw file truncated? Nothing was written; pass "
            "--allow-fewer to replace it"
        )


def extract_source(
    src: Source,
    path: Path,
    out_dir: Path,
    *,
    quiet: bool = False,
    t0: float | None = None,
    allow_fewer: bool = False,
) -> Summary:
    """Run one adapter over ``path`` and write its five output files under ``out_dir``.

    Records UTF-8 cannot store or with an over-long text become rejects (``screen``); the local
    files are checked against the pins (the summary says verified or unverified); an extraction
    with no trajectories, or fewer than the previous one in ``out_dir``, is refused unless
    ``allow_fewer`` (a truncated raw file must not replace good output). Everything is written
    to a temporary folder first and swapped in whole, so a failure leaves the old output and no
    temporary files behind."""
    t0 = time.perf_counter() if t0 is None else t0
    if not path.exists():
        raise DataError(
            f"{src.name}: raw folder {path} does not exist; pass --path, set "
            "FORESIGHT_DATA, or add --download"
        )
    res = screen(src.name, src.extract(path))
    _check_accounting(src.name, res)
    if not allow_fewer:
        _refuse_shrink(src, path, out_dir, res)
    pins = verify_pins(src, path)
    trajs = sorted(res.trajectories, key=lambda t: t.id)
    tmp_dir = out_dir.with_name(f".{out_dir.name}.tmp")
    if tmp_dir.exists():
        shutil.rmtree(tmp_dir)
    try:
        tmp_dir.mkdir(parents=True)
        traj_file = tmp_dir / "trajectories.jsonl"
        write_jsonl(traj_file, (t.to_dict() for t in trajs))
        n_dp = write_jsonl(
            tmp_dir / "decision_points.jsonl",
            (dp.to_dict() for t in _progress(trajs, src.name, quiet) for dp in decision_points(t)),
        )
        write_jsonl(tmp_dir / "rejects.jsonl", (asdict(r) for r in res.rejects))
        write_jsonl(tmp_dir / "exclusions.jsonl", (asdict(e) for e in res.exclusions))
        write_jsonl(tmp_dir / "withheld.jsonl", (asdict(w) for w in res.withheld))
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
            pins=pins.describe() if pins else "no pins",
            pin_mismatches=pins.differ[:20] if pins else (),
            withheld=len(res.withheld),
        )
        (tmp_dir / "summary.json").write_text(
            json.dumps(asdict(summary), indent=2) + "\n", encoding="utf-8"
        )
        _swap(tmp_dir, out_dir)
    finally:
        if tmp_dir.exists():
            shutil.rmtree(tmp_dir)
    _warn(src, res, pins)
    return summary


def _warn(src: Source, res: ExtractResult, pins: PinCheck | None) -> None:
    """One warning per reject, and one when local files differ from the pins."""
    for r in res.rejects:
        log.warning("%s: reject %s#%d: %s", src.name, r.file, r.position, r.reason)
    if pins and not pins.verified:
        log.warning(
            "%s: %d local file(s) differ from the pinned upstream %s (e.g. %s)",
            src.name,
            len(pins.differ),
            src.upstream.commit[:7] if src.upstream else "",
            pins.differ[0],
        )


def _swap(new: Path, out_dir: Path) -> None:
    """Put folder ``new`` in place of ``out_dir`` (the old one removed only once the new one is
    complete)."""
    old = out_dir.with_name(f".{out_dir.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if out_dir.exists():
        out_dir.rename(old)
    new.rename(out_dir)
    if old.exists():
        shutil.rmtree(old)


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
    diagnostic_subsets: tuple[str, ...] = ()
    """Subsets built as their own config and kept out of the headline (``Source``)."""
    upstream: bool = False
    """True for a published upstream dataset (pinned); False for the project's own corpus."""
    verified: bool = False
    """Its gold was verified blind before release (``Source.verified``): counts as reviewed."""
    headline: bool = False
    """True when the leaderboard's macro headline averages this source: every upstream source,
    and the project's contrast pairs (``Source.in_headline``)."""

    def config_of(self, traj: Trajectory) -> str:
        """The config a trajectory of this source is built into: ``<source>_<subset>`` for a
        diagnostic subset, else the source's name."""
        if traj.subset and traj.subset in self.diagnostic_subsets:
            return f"{self.name}_{traj.subset}"
        return self.name


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
        diagnostic_subsets=tuple(adapter.diagnostic_subsets),
        upstream=adapter.upstream is not None,
        headline=adapter.in_headline,
        verified=adapter.verified,
    )
