"""``python bench/inspect_import.py LOG --judge ID``: an Inspect AI log as a predictions file.

The log must come from ``inspect eval bench/interop/inspect_task.py`` on the current build: a log
made for another dataset version than ``leaderboards/ground_truth.jsonl``'s is refused. The file is
written to ``leaderboards/predictions/<judge>/<version>/<config_hash>.jsonl`` (docs/inspect.md);
``python bench/leaderboard.py`` then ranks the judge like any other, or lists it as incomplete when
the log lacks some decision points of the split the leaderboard scores. The file is appended
under its lock (``bench.core.lock``), as ``decide.py`` appends: while another run writes the same
file, the import is refused at once with that run's pid, host and start time (``--wait`` waits
for it instead).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/inspect_import.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
from pathlib import Path

from bench.core.errors import ConfigError
from bench.core.paths import GROUND_TRUTH, JUDGES_TOML, PREDICTIONS
from bench.core.script import setup_logging
from bench.interop.inspect_log import import_log
from bench.judging import specs
from bench.report.inputs import load_ground_truth


def main(argv: list[str] | None = None) -> int:
    """Import one log; prints where it went and how many decisions it holds."""
    ap = argparse.ArgumentParser(
        prog="bench inspect_import",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: bench inspect_import logs/2026-12-01T10-00-00_foresight.eval --judge my-judge",
    )
    ap.add_argument("log", type=Path, help="an Inspect eval log (.eval or .json)")
    ap.add_argument("--judge", required=True, help="judge id the predictions are filed under")
    ap.add_argument("--out", type=Path, default=PREDICTIONS, help="predictions folder")
    ap.add_argument("--ground-truth", type=Path, default=GROUND_TRUTH, help="ground-truth JSONL")
    ap.add_argument("--judges", type=Path, default=JUDGES_TOML, help="judges.toml (optional row)")
    ap.add_argument(
        "--wait",
        action="store_true",
        help="when another run is writing the same predictions file, wait for it to finish "
        "instead of stopping at once",
    )
    ap.add_argument("--quiet", action="store_true", help="warnings only")
    args = ap.parse_args(argv)
    setup_logging(args.quiet)
    if not specs.ID_RE.fullmatch(args.judge):
        raise ConfigError(
            f"--judge {args.judge!r} must be a lower-case slug (a-z, 0-9, '.', '_', '-')"
        )
    _, meta = load_ground_truth(args.ground_truth)
    row = None
    if args.judges.is_file():
        row = next((s for s in specs.load(args.judges) if s.id == args.judge), None)
    done = import_log(
        args.log, args.judge, args.out, str(meta["dataset_version"]), row, wait=args.wait
    )
    print(
        f"{args.judge}: {done.decisions} decisions ({done.errors} errored in Inspect) for dataset "
        f"{done.version} -> {done.path}"
    )
    return 0
