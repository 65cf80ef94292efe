"""One writer per file: an exclusive ``flock`` on a sibling lock file.

``FileLock(target)`` locks ``<target>.lock`` (for a predictions file ``<hash>.jsonl``, the file
``<hash>.jsonl.lock`` beside it) with ``fcntl.flock(LOCK_EX | LOCK_NB)`` and writes who holds it
into it: pid, host, boot id and start time, as one JSON object (docs/FORMATS.md). A second
process asking for the same lock fails at once with a ``LockedError`` naming the holder, or,
with ``wait=True``, polls until it is free. The kernel drops a ``flock`` when its process dies,
even by SIGKILL, so a lock file that is present but not locked is stale: its holder is gone (or
the machine rebooted); it is taken over and the takeover is logged as one warning. A lock
released normally removes its file.

Within one process the lock is re-entrant (a caller that holds it can open a writer that takes
it again), because two ``flock`` calls from one process on two descriptors would block each
other.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.core.errors import LockedError
from bench.core.ioerrors import naming

log = logging.getLogger(__name__)

SUFFIX = ".lock"
"""A lock file's name is its target's name plus this suffix."""

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
"""Linux's id of the current boot (a lock from an earlier boot is stale whatever its pid)."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a lock: the record inside the lock file."""

    pid: int
    """Process id."""
    host: str
    """Host name."""
    since: str
    """When the lock was taken (ISO 8601, UTC)."""
    boot: str = ""
    """The host's boot id then ('' where the OS has none)."""

    def describe(self) -> str:
        """``pid 123 on host since 2026-12-05T08:40:00+00:00``."""
        return f"pid {self.pid} on {self.host} since {self.since}"

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        """The record of a lock file's text; None when empty or unreadable."""
        try:
            row: Any = json.loads(text)
            return cls(
                int(row["pid"]), str(row["host"]), str(row["since"]), str(row.get("boot", ""))
            )
        except (ValueError, TypeError, KeyError):
            return None


def lock_path(target: str | os.PathLike[str]) -> Path:
    """The lock file of ``target`` (``<target>.lock``)."""
    p = Path(target)
    return p.with_name(p.name + SUFFIX)


def boot_id() -> str:
    """This boot's id ('' where unknown)."""
    try:
        return BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def me() -> Holder:
    """The record this process writes into a lock it takes."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return Holder(os.getpid(), socket.gethostname(), now, boot_id())


def alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def why_stale(h: Holder | None) -> str:
    """Why a lock file that nobody has locked is left over, in words."""
    if h is None:
        return "its record is unreadable"
    if h.host != socket.gethostname():
        return f"it was taken on host {h.host}, whose flock no longer holds it"
    boot = boot_id()
    if h.boot and boot and h.boot != boot:
        return "the machine has rebooted since"
    if not alive(h.pid):
        return "that process is gone"
    return f"pid {h.pid} exists but does not hold the lock (the pid was reused)"


@dataclass
class _Held:
    fd: int
    count: int


_HELD: dict[str, _Held] = {}
"""Locks this process holds, by absolute lock-file path (the re-entrancy count)."""
_GUARD = threading.Lock()


class FileLock:
    """An exclusive lock on ``target``, held through ``<target>.lock``; a context manager.

    ``wait``: poll every ``poll_s`` until free (at most ``timeout_s`` when given) instead of
    failing at once. ``hint``: what the refusal tells the user to do."""

    def __init__(
        self,
        target: str | os.PathLike[str],
        *,
        wait: bool = False,
        hint: str = "run again when it has finished",
        poll_s: float = 0.5,
        timeout_s: float | None = None,
    ) -> None:
        self.target = Path(target)
        self.path = lock_path(target)
        self.wait = wait
        self.hint = hint
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self._key = os.path.abspath(self.path)
        self._held = False

    def acquire(self) -> None:
        """Take the lock (see the class docstring); raises ``LockedError`` when refused."""
        with _GUARD:
            held = _HELD.get(self._key)
            if held is not None:
                held.count += 1
                self._held = True
                return
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        said = False
        while True:
            fd, holder = self._try()
            if fd is not None:
                break
            if not self.wait or (deadline is not None and time.monotonic() >= deadline):
                raise LockedError(self._refusal(holder))
            if not said:
                log.info("waiting for %s: %s", self.target, self._who(holder))
                said = True
            time.sleep(self.poll_s)
        with _GUARD:
            _HELD[self._key] = _Held(fd, 1)
        self._held = True

    def _try(self) -> tuple[int | None, Holder | None]:
        """(descriptor holding the lock, None) or (None, the holder's record)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(100):  # the file can be replaced between open and flock: try again
            with naming(self.path):
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = Holder.parse(_read(fd))
                os.close(fd)
                return None, holder
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:  # its holder removed it as we opened it: lock the new one
                os.close(fd)
                continue
            try:
                self._claim(fd)
            except BaseException:
                os.close(fd)
                raise
            return fd, None
        raise LockedError(f"{self.path} keeps being replaced: is another process looping on it?")

    def _claim(self, fd: int) -> None:
        """Write this process's record, after saying so when a stale one was there."""
        old = _read(fd)
        if old.strip():
            h = Holder.parse(old)
            who = h.describe() if h else "an unknown holder"
            log.warning("took over the stale lock %s of %s: %s", self.path, who, why_stale(h))
        data = json.dumps(asdict(me()), sort_keys=True).encode() + b"\n"
        with naming(self.path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)

    def _who(self, h: Holder | None) -> str:
        return f"held by {h.describe()}" if h else "held by another process"

    def _refusal(self, h: Holder | None) -> str:
        waited = f" (still held after {self.timeout_s:g} s of --wait)" if self.wait else ""
        return (
            f"{self.target} is being written by another run: {self._who(h)}"
            f"{waited} (lock file {self.path}); {self.hint}"
        )

    def release(self) -> None:
        """Release the lock; the last release in this process removes the lock file."""
        if not self._held:
            return
        self._held = False
        with _GUARD:
            held = _HELD[self._key]
            held.count -= 1
            if held.count:
                return
            del _HELD[self._key]
        try:
            self.path.unlink(missing_ok=True)
        except OSError:  # a lock file left empty is taken without a stale-lock warning
            with contextlib.suppress(OSError):
                os.ftruncate(held.fd, 0)
        finally:
            os.close(held.fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", "replace")
    except OSError:
        return ""
