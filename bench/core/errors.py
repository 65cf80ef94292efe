"""The project's small error hierarchy. Every message says what to do next."""

from __future__ import annotations


class BenchError(Exception):
    """Base class: an error a user can act on. Scripts print it and exit with status 2."""


class ConfigError(BenchError):
    """A configuration file (judges.toml, taxonomy.toml, cost matrix) is invalid."""


class DataError(BenchError):
    """Input data is missing, malformed or inconsistent."""


class RecordError(DataError):
    """One raw record cannot be converted; extraction sends it to the rejects file."""


class IntegrityError(DataError):
    """A downloaded or built file does not match its pinned hash, or ids do not line up."""


class LeakError(DataError):
    """A pre-execution view would show the judged action's own result, or the judged action is
    missing from its rendered prompt."""


class StorageError(BenchError):
    """A write failed for a reason the user can fix (a full disk, a permission, a read-only
    folder); the message names the path and what was saved. Scripts exit with
    ``bench.core.ioerrors.EXIT_IO``."""


class LockedError(BenchError):
    """Another process holds the lock on a file this one must write (``bench.core.lock``)."""
