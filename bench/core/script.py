"""What every command's ``main`` shares: the error-to-exit-status wrapper and logging set-up.

A command is a module at the top of ``bench/`` with ``main(argv: list[str] | None) -> int``;
``bench <name>`` (``bench.cli``) and ``python bench/<name>.py`` (through ``bench.cli.launch``)
both call it through ``run``. Library code logs through ``logging.getLogger(__name__)`` and never
configures logging; only a ``main`` calls ``setup_logging``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from bench.core.errors import BenchError


def run(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Call a command's main, turning a BenchError into a one-line message and exit status 2."""
    try:
        return main(argv)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def setup_logging(quiet: bool = False, verbose: bool = False) -> None:
    """Configure logging for a command's main (never done at import time)."""
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
