"""What every command's ``main`` shares: the error-to-exit-status wrapper, interrupts and logging.

A command is a module at the top of ``bench/`` with ``main(argv: list[str] | None) -> int``;
``bench <name>`` (``bench.cli``) and ``python bench/<name>.py`` (through ``bench.cli.launch``)
both call it through ``run``. Library code logs through ``logging.getLogger(__name__)`` and never
configures logging; only a ``main`` calls ``setup_logging``.

Exit statuses ``run`` gives: a ``BenchError``, 2, with its one-line message; an I/O error a user
can act on (a full disk, a permission, a read-only folder: ``bench.core.ioerrors``), 74, with one
line naming the path; an interrupt, 128 + the signal (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from bench.core.errors import BenchError, StorageError
from bench.core.ioerrors import EXIT_IO, describe, sentence


class Interrupted(KeyboardInterrupt):
    """A second SIGINT or SIGTERM while a command was finishing what it had in hand: stop now."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        """The signal received."""


def run(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Call a command's main, turning a BenchError or an I/O error into one line on stderr and
    an exit status (module docstring); any other exception keeps its traceback."""
    try:
        return main(argv)
    except StorageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_IO
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        if describe(e) is None:
            raise
        print(f"error: {sentence(e)}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        print("interrupted", file=sys.stderr)
        return 128 + signum


class Interrupts:
    """SIGINT and SIGTERM as a request to stop, for a command that can finish what it has in
    hand (``decide.py``): within the ``with`` block the first signal only sets the flag
    (``is_set``), a second one raises ``Interrupted`` to stop at once. Outside the main thread
    (a test calling ``main`` from a thread) no handler is installed and the flag stays unset."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    """The signals handled."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first signal received, or None."""
        self._old: dict[int, Any] = {}

    def is_set(self) -> bool:
        """Whether a stop was asked for."""
        return self.signum is not None

    @property
    def status(self) -> int:
        """The exit status the signal calls for (128 + its number; 0 when none came)."""
        return 128 + self.signum if self.signum is not None else 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            raise Interrupted(signum)
        self.signum = signum
        name = signal.Signals(signum).name
        # os.write, not print: the handler may run while the main thread is inside a print
        os.write(
            2,
            f"\n{name}: finishing the decisions in hand, then stopping "
            "(send it again to stop at once)\n".encode(),
        )

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                self._old[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old.clear()


def setup_logging(quiet: bool = False, verbose: bool = False) -> None:
    """Configure logging for a command's main (never done at import time)."""
    level = logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
