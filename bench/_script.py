"""Shared plumbing for the thin script entry points (``python bench/<name>.py``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from bench.errors import BenchError


def run(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Call a script's main, turning a BenchError into a one-line message and exit status 2."""
    try:
        return main(argv)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def setup_logging(quiet: bool = False, verbose: bool = False) -> None:
    """Configure logging for a script's main (never done at import time)."""
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
