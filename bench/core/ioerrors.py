"""I/O errors as sentences: a full disk, a refused permission or a read-only folder.

A command that hits one of these gets one line naming the path, what was saved and what to do,
and a non-zero exit (``EXIT_IO``), never a traceback. ``describe`` knows the errors a user can
act on; ``sentence`` builds the line; ``naming`` puts the path on an ``OSError`` that the OS
raised without one (a ``write`` on an open file names no file). ``bench.core.script.run`` turns
any such ``OSError`` into its sentence, and a ``StorageError`` (raised where a command knows
what it saved, e.g. decide's "638 decisions saved in <path>") into its message.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

EXIT_IO = 74
"""Exit status of a command stopped by an I/O error (``EX_IOERR`` of sysexits.h)."""


@dataclass(frozen=True)
class Known:
    """An I/O error a user can act on."""

    reason: str
    """What happened, in words."""
    fix: str
    """What to do; ``{folder}`` is the folder of the path."""


KNOWN: dict[int, Known] = {
    errno.ENOSPC: Known("no space left on device", "free space"),
    errno.EDQUOT: Known("disk quota exceeded", "free space (or raise the quota)"),
    errno.EACCES: Known("permission denied", "give this user write access to {folder}"),
    errno.EPERM: Known("operation not permitted", "give this user write access to {folder}"),
    errno.EROFS: Known(
        "read-only file system", "remount {folder} read-write (or write somewhere else)"
    ),
}
"""The errors turned into sentences, by errno; any other ``OSError`` stays a traceback (a bug
or an unexpected state worth reporting)."""


def describe(e: BaseException) -> Known | None:
    """The reason and fix for an I/O error a user can act on; None for anything else."""
    if isinstance(e, OSError) and e.errno is not None:
        return KNOWN.get(e.errno)
    return None


def _path_of(e: OSError, path: str | os.PathLike[str] | None) -> str | None:
    if path is not None:
        return str(path)
    name = e.filename
    if isinstance(name, bytes):
        return os.fsdecode(name)
    return str(name) if name is not None else None


def sentence(
    e: OSError,
    *,
    path: str | os.PathLike[str] | None = None,
    saved: str = "",
    resume: bool = False,
    path_in_saved: bool = False,
) -> str:
    """One line for an I/O error: ``<path>: <reason>; <saved>; <fix> and rerun``. ``path``
    defaults to the error's own file name; ``saved`` says what was kept (left out of the line
    when empty); ``resume`` ends the line with "to resume"; ``path_in_saved``: ``saved`` names
    the path already, so the line does not start with it."""
    known = describe(e)
    where = _path_of(e, path)
    folder = str(Path(where).parent) if where else "the output folder"
    if known is None:
        head, fix = (e.strerror or str(e)), "fix the cause"
    else:
        head, fix = known.reason, known.fix.format(folder=folder)
    if not where:
        head = f"{head} (the OS did not say which file)"
    elif not path_in_saved:
        head = f"{where}: {head}"
    parts = [head, saved, f"{fix} and rerun" + (" to resume" if resume else "")]
    return "; ".join(p for p in parts if p)


@contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, an ``OSError`` without a file name gets ``path`` as its name, so the
    sentence can say which file a failed ``write`` was writing."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            e.filename = str(path)
        raise
