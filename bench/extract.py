"""Raw sources -> canonical trajectories and decision points under ``work/extract/<source>/``.

    python bench/extract.py --source rjudge [--path P] [--out DIR] [--strict] [--download]
    python bench/extract.py --source all

Writes ``trajectories.jsonl``, ``decision_points.jsonl``, ``rejects.jsonl``,
``exclusions.jsonl`` and ``summary.json`` (docs/FORMATS.md) and prints one summary line per
source. Malformed raw records are counted as rejects, never dropped; ``--strict`` turns any
reject into exit status 1.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/extract.py`: the repo root, not bench/, first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from bench import sources  # noqa: E402
from bench._script import run, setup_logging  # noqa: E402
from bench.errors import DataError, IntegrityError  # noqa: E402
from bench.jsonl import sha256_file, write_jsonl  # noqa: E402
from bench.paths import REPO_ROOT, data_root, work_dir  # noqa: E402
from bench.schema import decision_points  # noqa: E402
from bench.sources.base import ExtractResult, Source  # noqa: E402

log = logging.getLogger(__name__)

PROGRESS_MIN = 200
"""Show a progress bar from this many trajectories on (unless --quiet)."""


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
        return src.default_path(REPO_ROOT / "data")
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


def build_parser() -> argparse.ArgumentParser:
    """The command-line options."""
    ap = argparse.ArgumentParser(
        prog="bench extract",
        description="Convert raw sources into canonical trajectories and decision points.",
    )
    ap.add_argument(
        "--source",
        action="append",
        required=True,
        metavar="NAME",
        help=f"adapter to run (repeatable), one of {', '.join(sources.names())}, or 'all'",
    )
    ap.add_argument(
        "--path",
        help="raw folder of the source (with several sources: a root holding each source's "
        "folder); default $FORESIGHT_DATA or ../shared/datasets, data/sample for 'sample'",
    )
    ap.add_argument("--out", help="output root (default: work/extract)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when any record is rejected")
    ap.add_argument(
        "--download",
        action="store_true",
        help="fetch the pinned upstream files first (verifying sha256) when they are missing",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar, warnings only")
    ap.add_argument("--verbose", action="store_true", help="debug logging")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Extract each requested source; 0 on success, 1 when --strict finds rejects."""
    args = build_parser().parse_args(argv)
    setup_logging(quiet=args.quiet, verbose=args.verbose)
    names = sources.names() if "all" in args.source else list(dict.fromkeys(args.source))
    adapters = [sources.get(n) for n in names]  # unknown names fail before any work
    out_root = Path(args.out) if args.out else work_dir() / "extract"
    total_rejects = 0
    for src in adapters:
        t0 = time.perf_counter()
        if args.download and src.upstream is not None:
            path = _download_path(src, args.path, len(adapters))
            from bench.sources.download import fetch

            fetch(src, path)
        else:
            path = resolve_path(src, args.path, len(adapters))
        summary = extract_source(src, path, out_root / src.name, quiet=args.quiet, t0=t0)
        total_rejects += summary.rejects
        print(summary.line())
    print(f"wrote {out_root}")
    if args.strict and total_rejects:
        print(
            f"error: {total_rejects} rejected record(s) with --strict; see rejects.jsonl",
            file=sys.stderr,
        )
        return 1
    return 0


def _download_path(src: Source, explicit: str | None, n: int) -> Path:
    """Where --download puts the files: the usual raw folder when one is configured, else
    ``work/raw/<folder>``."""
    try:
        return resolve_path(src, explicit, n)
    except DataError:
        return work_dir() / "raw" / src.folder


if __name__ == "__main__":
    sys.exit(run(main))
