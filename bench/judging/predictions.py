"""Predictions files: ``leaderboards/predictions/<judge>/<dataset_version>/<config_hash>.jsonl``.

Append-only JSON Lines (docs/FORMATS.md). A ``"type": "run"`` line opens each run session, a
``"type": "run_end"`` line closes it, and each decision is a ``"type": "decision"`` line written
and flushed as soon as that decision completes, so a killed process (even SIGKILL) loses only the
decisions in flight. The last decision line for an id wins; a torn final line is skipped when
reading and cut off before the next append.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.core.ioerrors import naming
from bench.core.jsonl import clean_text
from bench.core.lock import FileLock
from bench.core.verdict import Status, Verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prediction:
    """One decision line of a predictions file: the judge's verdict plus how it was obtained."""

    id: str
    """Decision point id."""
    verdict: Verdict
    """The parsed (or directly given) verdict; its fields are the line's verdict columns."""
    latency_s: float | None = None
    """Wall time of the backend call for this decision (batched: the batch time / batch size)."""
    batch_size: int = 1
    """How many decisions shared the call that produced this one."""
    warmup: bool = False
    """True for the run's warm-up call: its latency is excluded from timing figures."""
    tokens_in: int | None = None
    """Prompt tokens, when known."""
    tokens_out: int | None = None
    """Completion tokens, when known."""
    error: str | None = None
    """The last error message when status is error."""
    attempts: int = 1
    """Backend calls made for this decision (retries included)."""

    @property
    def status(self) -> Status:
        """The verdict's status."""
        return self.verdict.status

    def to_dict(self) -> dict[str, Any]:
        """The JSONL form (docs/FORMATS.md), with ``"type": "decision"``: the verdict's fields
        flattened beside the run details."""
        v = self.verdict
        return {
            "type": "decision",
            "id": self.id,
            "status": v.status,
            "act": v.act,
            "binary": v.binary,
            "risk": v.risk,
            "fail": v.fail,
            "harm": v.harm,
            "src": v.src,
            "cite": v.cite,
            "reason": v.reason,
            "raw": v.raw,
            **({"raw_truncated": True} if v.raw_truncated else {}),
            "latency_s": self.latency_s,
            "batch_size": self.batch_size,
            "warmup": self.warmup,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "error": self.error,
            "attempts": self.attempts,
        }


def path_for(
    out_root: str | os.PathLike[str],
    judge_id: str,
    version: str,
    config_hash: str,
    stress: str | None = None,
) -> Path:
    """Where a judge's predictions for one dataset version and config live; a stress family's
    go one level down, ``<judge>/<version>/stress/<family>/<config_hash>.jsonl`` (so the
    leaderboard's main scan never mixes them with the originals)."""
    base = Path(out_root) / judge_id / version
    if stress:
        base = base / "stress" / stress
    return base / f"{config_hash}.jsonl"


@dataclass(frozen=True)
class BadLine:
    """A line of a predictions file that cannot be used, and why."""

    path: str
    """The file."""
    line: int
    """1-based line number."""
    reason: str
    """What is wrong with it."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def _orjson_loads() -> Any:
    """orjson's ``loads`` when it is installed (about 4x faster than ``json.loads`` on these
    lines), else None."""
    try:
        import orjson  # noqa: PLC0415 - a declared dependency; json.loads stays the fallback
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return orjson.loads


_FAST_LOADS = _orjson_loads()
_BIG = float(2**63)


def _fast_differs(row: Any) -> bool:
    """Whether ``json.loads`` may read this orjson-read line differently where a reader of
    decision fields looks: a line that is not a decision (run lines are kept whole), or a
    top-level number orjson may have read from an integer beyond 64 bits (it gives a float,
    ``json.loads`` an int)."""
    if not isinstance(row, dict) or row.get("type") != "decision":
        return True
    return any(v.__class__ is float and abs(v) >= _BIG for v in row.values())


def _parse(
    raw: bytes, name: str, i: int, torn_last: bool, fast: bool = False
) -> dict[str, Any] | BadLine | None:
    """One line: its object, a BadLine saying why it cannot be used, or None (blank, or the
    torn last line of a writer killed mid-line). ``fast``: decision lines through orjson (see
    ``scan_bytes``), every other line, and every line orjson refuses (NaN, infinities, lone
    surrogates, a BOM, bad UTF-8), through ``json.loads``, which names the reason."""
    if fast and _FAST_LOADS is not None:
        try:
            row = _FAST_LOADS(raw)
        except ValueError:
            pass
        else:
            if not _fast_differs(row):
                return _checked_line(row, name, i)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return (
            None
            if torn_last
            else BadLine(name, i, f"not valid UTF-8 ({e.reason} at byte {e.start})")
        )
    try:
        row = json.loads(text)
    except json.JSONDecodeError as e:
        return None if torn_last else BadLine(name, i, f"not valid JSON ({e.msg})")
    return _checked_line(row, name, i)


def _checked_line(row: Any, name: str, i: int) -> dict[str, Any] | BadLine:
    if not isinstance(row, dict):
        return BadLine(name, i, f"a JSON {type(row).__name__}, not an object")
    if row.get("type") == "decision" and not (isinstance(row.get("id"), str) and row["id"]):
        return BadLine(name, i, "a decision line without an id")
    return row


def scan_bytes(
    data: bytes, name: str, fast: bool = False
) -> tuple[list[dict[str, Any]], list[BadLine]]:
    """(usable lines, bad lines) of a predictions file's content; ``name`` is the file the bad
    lines name. A line is bad when it is not UTF-8, not JSON, not a JSON object, or a decision
    without a string id; a torn last line (a writer killed mid-line) is not a bad line, it is
    simply not there yet. ``fast``: decision lines are read by orjson when installed, giving
    what ``json.loads`` gives in every top-level field (the leaderboard's reader); nested values
    may differ for integers beyond 64 bits, so a reader that writes lines back keeps the
    default."""
    lines = data.split(b"\n")
    torn = bool(lines) and lines[-1] != b""
    rows: list[dict[str, Any]] = []
    bad: list[BadLine] = []
    last = len(lines)
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        got = _parse(raw, name, i, torn and i == last, fast)
        if isinstance(got, BadLine):
            bad.append(got)
        elif got is not None:
            rows.append(got)
    return rows, bad


def scan(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[BadLine]]:
    """(usable lines, bad lines) of a predictions file (``scan_bytes`` on its content); a file
    that does not exist has neither."""
    p = Path(path)
    if not p.is_file():
        return [], []
    return scan_bytes(p.read_bytes(), str(p))


def read_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every usable line of a predictions file, for resuming: a bad line is logged (file and
    line) and left out, so its decision is simply made again."""
    rows, bad = scan(path)
    for b in bad:
        log.warning("%s (left out; its decision will be made again)", b)
    return rows


def latest(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The last decision line per id."""
    out: dict[str, dict[str, Any]] = {}
    for row in read_lines(path):
        if row.get("type") == "decision":
            out[row["id"]] = row
    return out


def done_ids(path: str | os.PathLike[str]) -> set[str]:
    """Ids whose last decision is not an error: a resumed run skips them and retries the rest."""
    return {i for i, row in latest(path).items() if row.get("status") != "error"}


def _cut_torn_tail(path: Path) -> None:
    """Drop a final line without its newline (the writer was killed mid-line), so the next
    append starts on a fresh line instead of gluing onto the torn one."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        size = f.seek(0, os.SEEK_END)
        chunk = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            buf = f.read(pos - start)
            nl = buf.rfind(b"\n")
            if nl >= 0:
                f.truncate(start + nl + 1)
                return
            pos = start
        f.truncate(0)


def safe_row(row: Any) -> Any:
    """``row`` with every string UTF-8 can store and every float finite (JSON has no NaN):
    lone surrogates become U+FFFD, NaN and infinities become null. Used when a row fails to
    encode, so one bad value never loses a decision or kills a run."""
    if isinstance(row, str):
        return clean_text(row)[0]
    if isinstance(row, float):
        return row if math.isfinite(row) else None
    if isinstance(row, Mapping):
        return {str(safe_row(k)): safe_row(v) for k, v in row.items()}
    if isinstance(row, list | tuple):
        return [safe_row(v) for v in row]
    return row


class Writer:
    """Appends lines to one predictions file, each written whole and unbuffered so that a kill
    loses nothing already written. While open it holds the file's lock (``bench.core.lock``:
    ``<file>.jsonl.lock`` beside it), so two runs never append to one file: a second writer
    fails at once with a ``LockedError`` naming the holder, or waits with ``wait=True``. The
    lock is re-entrant, so a caller that took it first (to read what is done before judging)
    keeps it. A write that fails (a full disk) raises ``OSError`` naming the file and leaves
    the writer refusing further lines, so a torn line is never followed by another one."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        wait: bool = False,
        hint: str = "run again when it has finished",
    ) -> None:
        self.path = Path(path)
        self.decisions = 0
        """Decision lines written."""
        self.failed: OSError | None = None
        """The error that stopped writing, if any."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.path, wait=wait, hint=hint)
        self._lock.acquire()
        try:
            with naming(self.path):
                _cut_torn_tail(self.path)
                self._f: IO[bytes] = self.path.open("ab", buffering=0)
        except BaseException:
            self._lock.release()
            raise
        self._dumps = json.JSONEncoder(ensure_ascii=False, sort_keys=True, allow_nan=False).encode

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one line. A row that JSON or UTF-8 cannot hold (a NaN, a lone surrogate) is
        written with those values replaced (``safe_row``), never lost."""
        if self.failed is not None:
            raise self.failed
        try:
            data = (self._dumps(row) + "\n").encode("utf-8")
        except (ValueError, UnicodeEncodeError):
            data = (self._dumps(safe_row(row)) + "\n").encode("utf-8")
        view = memoryview(data)
        try:
            with naming(self.path):
                while view:  # unbuffered: a short write leaves the rest to write again
                    n = self._f.write(view)
                    if not n:
                        raise OSError(errno.EIO, "the file took no bytes")
                    view = view[n:]
        except OSError as e:
            self.failed = e
            raise

    def decision(self, p: Prediction) -> None:
        """Append one decision line."""
        self.write(p.to_dict())
        self.decisions += 1

    def close(self) -> None:
        """Close the file (nothing is buffered, so closing never fails on a full disk) and
        release the lock."""
        try:
            self._f.close()
        finally:
            self._lock.release()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
