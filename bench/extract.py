"""Raw sources -> canonical trajectories and decision points under ``work/extract/<source>/``.

    python bench/extract.py --source rjudge [--path P] [--out DIR] [--strict] [--download]
                            [--allow-fewer]
    python bench/extract.py --source all

Writes ``trajectories.jsonl``, ``decision_points.jsonl``, ``rejects.jsonl``,
``exclusions.jsonl`` and ``summary.json`` (docs/FORMATS.md) and prints one summary line per
source. Malformed raw records are counted as rejects, never dropped; ``--strict`` turns any
reject into exit status 1. A full disk, a permission or a read-only folder stops it with one line
naming the path and the sources already extracted (status 74); a source's previous extraction is
replaced only once its new one is complete.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/extract.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
import sys
import time
from pathlib import Path

from bench import sources
from bench.core.errors import DataError, StorageError
from bench.core.ioerrors import describe, sentence
from bench.core.paths import work_dir
from bench.core.script import setup_logging
from bench.sources.base import Source
from bench.sources.download import fetch
from bench.sources.extraction import extract_source, resolve_path


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
        "--allow-fewer",
        action="store_true",
        help="write the extraction even when it has no trajectories, or fewer than the previous "
        "one in the output folder (by default that is refused: a raw file may be truncated)",
    )
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
    done: list[str] = []
    for src in adapters:
        t0 = time.perf_counter()
        if args.download and src.upstream is not None:
            path = _download_path(src, args.path, len(adapters))
            fetch(src, path)
        else:
            path = resolve_path(src, args.path, len(adapters))
        try:
            summary = extract_source(
                src,
                path,
                out_root / src.name,
                quiet=args.quiet,
                t0=t0,
                allow_fewer=args.allow_fewer,
            )
        except OSError as e:
            if describe(e) is None:
                raise
            raise StorageError(_unsaved(e, out_root, src.name, done)) from None
        done.append(src.name)
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


def _unsaved(e: OSError, out_root: Path, name: str, done: list[str]) -> str:
    """The one line for a write the disk refused: the path, what was kept, what to do. A source's
    files are written in a temporary folder and swapped in whole, so its previous extraction is
    left as it was."""
    kept = f"{name}'s previous extraction in {out_root / name} is unchanged"
    if done:
        kept = f"extracted {', '.join(done)}; " + kept
    return sentence(e, path=e.filename or out_root / f".{name}.tmp", saved=kept)


def _download_path(src: Source, explicit: str | None, n: int) -> Path:
    """Where --download puts the files: the usual raw folder when one is configured, else
    ``work/raw/<folder>``."""
    try:
        return resolve_path(src, explicit, n)
    except DataError:
        return work_dir() / "raw" / src.folder
