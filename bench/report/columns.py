"""A predictions file reduced to the columns the leaderboard scores, cached by its content.

``reduce_file`` reads a predictions file once and keeps only what scoring reads: per decision id
(the last line per id wins, ids in order of first appearance) its checked status, act, risk and
taxonomy fields, and its latency, token counts and warm-up flag; the run lines whole; the bad
lines (line number and reason); and the ids decided more than once. The raw answers are not
kept: the Space reads them from the predictions files itself.

The verdict rules stay the one validator, ``bench.core.verdict.from_row`` (through
``checked``): it is applied once per distinct verdict tuple (status, act, risk, fail, harm, src,
cite, with the types of risk and cite, since ``True``, ``1`` and ``1.0`` are judged apart), and
every line with that tuple gets its answer. A line ``json.loads`` had to read (orjson refused
it: it may hold a lone surrogate or a NaN, which the validator treats apart) goes through
``from_row`` on its own.

``load`` keeps each reduction under ``work/cache/predictions/`` (``bench.core.paths``:
``prediction_cache()``) as ``<sha256 of the file>-<fingerprint>.npz``. The fingerprint covers
the cache format, the source of the validator, of this module and of the line reader, and the
taxonomy's names: an unchanged file is never parsed again, and a changed file, rule or
vocabulary is parsed afresh. A cache file that cannot be read is ignored and rewritten.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

from bench.core import verdict as verdict_rules
from bench.core.labels import ACTS
from bench.core.taxonomy import Taxonomy, load_taxonomy
from bench.core.verdict import from_row
from bench.judging import predictions as reader
from bench.metrics.inputs import ACT_CODE, STATUS_CODE, STATUSES, Predictions

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""Version of the cached layout; raise it when the reduction changes in a way the source
fingerprint would not show (it shows any edit of the validator, the reader or this module)."""

_TIMING = ("latency_s", "tokens_in", "tokens_out")
_KEYS = ("type", "id", "status", "act", "risk", "fail", "harm", "src", "cite", *_TIMING, "warmup")
_FIELDS = itemgetter(*_KEYS)
_TAXONOMY_FIELDS = ("fail", "harm", "src")


@dataclass(frozen=True, eq=False)
class DecisionColumns:
    """One entry per decision id: the checked verdict and the timing fields, as arrays."""

    ids: np.ndarray
    """Decision-point ids (object str), unique."""
    status: np.ndarray
    """Index into ``STATUSES`` of the checked status (int8)."""
    act: np.ndarray
    """Act code 0/1/2, or -1 when the verdict has no act (int8)."""
    risk: np.ndarray
    """Risk 0..100, NaN when none (float64)."""
    fail: np.ndarray
    """Failure mode (a taxonomy name or NONE), None when not given (object)."""
    harm: np.ndarray
    """Harm type, None when not given (object)."""
    src: np.ndarray
    """Risk source, None when not given (object)."""
    latency_s: np.ndarray
    """Seconds, NaN when the line gave no finite number (float64)."""
    tokens_in: np.ndarray
    """Prompt tokens, NaN when not a finite number (float64)."""
    tokens_out: np.ndarray
    """Completion tokens, NaN when not a finite number (float64)."""
    warmup: np.ndarray
    """True where the line says ``"warmup": true`` (bool)."""

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def position(self) -> dict[str, int]:
        """Id -> its entry."""
        return {i: n for n, i in enumerate(self.ids.tolist())}

    def take(self, index: np.ndarray) -> DecisionColumns:
        """The entries at ``index`` (an integer array or a boolean mask), in that order."""
        return DecisionColumns(**{f: getattr(self, f)[index] for f in self.__dataclass_fields__})

    def predictions(self) -> Predictions:
        """The verdict columns as the metrics read them."""
        return Predictions(
            ids=self.ids,
            act=self.act,
            risk=self.risk,
            status=self.status,
            fail=self.fail,
            harm=self.harm,
            src=self.src,
        )

    @cached_property
    def _rows(self) -> tuple[list[Any], ...]:
        """Every column as a list of row values (built once, for ``row``)."""
        acts = [*ACTS, None]  # code -1 -> None
        return (
            self.ids.tolist(),
            [STATUSES[s] for s in self.status.tolist()],
            [acts[a] for a in self.act.tolist()],
            *([None if math.isnan(x) else x for x in getattr(self, f).tolist()]
              for f in ("risk", *_TIMING)),
            self.fail.tolist(),
            self.harm.tolist(),
            self.src.tolist(),
            self.warmup.tolist(),
        )  # fmt: skip

    def row(self, n: int) -> dict[str, Any]:
        """Entry ``n`` as a decision row (the fields scoring reads; risk as a float)."""
        i, st, a, risk, lat, t_in, t_out, fail, harm, src, warm = (c[n] for c in self._rows)
        return {
            "id": i,
            "status": st,
            "act": a,
            "risk": risk,
            "fail": fail,
            "harm": harm,
            "src": src,
            "latency_s": lat,
            "tokens_in": t_in,
            "tokens_out": t_out,
            "warmup": warm,
        }


class DecisionRows(Mapping[str, Mapping[str, Any]]):
    """Id -> decision row, read from the columns on demand (a row is built when asked for)."""

    def __init__(self, columns: DecisionColumns) -> None:
        self._c = columns

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        return self._c.row(self._c.position[key])

    def __contains__(self, key: object) -> bool:
        return key in self._c.position

    def __iter__(self) -> Iterator[str]:
        return iter(self._c.position)

    def __len__(self) -> int:
        return len(self._c)


@dataclass(frozen=True, eq=False)
class Reduced:
    """What the leaderboard keeps of one predictions file."""

    columns: DecisionColumns
    """The last decision per id, checked."""
    runs: tuple[Mapping[str, Any], ...]
    """The run lines, whole, in file order."""
    bad: tuple[tuple[int, str], ...] = ()
    """(line number, reason) of every line that cannot be used."""
    repeated: tuple[str, ...] = ()
    """Ids with more than one answer (a decision line whose status is not error), sorted."""
    changed: tuple[str, ...] = ()
    """Those of them whose answers differ in status, act or risk, sorted."""

    def bad_lines(self, path: str) -> list[reader.BadLine]:
        """The bad lines, naming ``path``."""
        return [reader.BadLine(path, line, reason) for line, reason in self.bad]


# ------------------------------------------------------------------------------ reduction


@dataclass
class _Builder:
    """Columns under construction: one slot per id, the last line's values."""

    vocab: Taxonomy
    pos: dict[str, int] = field(default_factory=dict)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    answered: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    repeated: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    checked: dict[tuple[Any, ...], tuple[int, int, float, Any, Any, Any]] = field(
        default_factory=dict
    )

    def verdict(self, row: Mapping[str, Any], t: tuple[Any, ...], fast: bool) -> tuple[Any, ...]:
        """(status code, act code, risk, fail, harm, src) of a decision line, through the one
        validator: once per distinct verdict tuple when the line was read by orjson."""
        key = (*t[2:9], t[4].__class__, t[8].__class__)
        if fast:
            try:
                return self.checked[key]
            except KeyError:
                pass
            except TypeError:  # an unhashable value (a list, an object): judge this line alone
                fast = False
        v = from_row(row, self.vocab)
        out = (
            STATUS_CODE[v.status],
            ACT_CODE.get(v.act or "", -1),
            math.nan if v.risk is None else float(v.risk),
            v.fail,
            v.harm,
            v.src,
        )
        if fast:
            self.checked[key] = out
        return out

    def add(self, did: str, checked: tuple[Any, ...], t: tuple[Any, ...]) -> None:
        """Record a decision line (it replaces an earlier one for the same id)."""
        values = (did, *checked, _number(t[9]), _number(t[10]), _number(t[11]), t[12] is True)
        n = self.pos.get(did)
        if n is None:
            self.pos[did] = len(self.rows)
            self.rows.append(values)
        else:
            self.rows[n] = values
        if checked[0] == STATUS_CODE["error"]:
            return  # an errored decision retried later is the normal resume, not a repeat
        answer = checked[:3]
        before = self.answered.get(did)
        if before is not None:
            self.repeated.add(did)
            if not _same(before, answer):
                self.changed.add(did)
        self.answered[did] = answer

    def columns(self) -> DecisionColumns:
        """The finished arrays."""
        names = list(DecisionColumns.__dataclass_fields__)
        c: dict[str, list[Any]] = {k: [] for k in names}
        if self.rows:
            c = dict(zip(names, map(list, zip(*self.rows, strict=True)), strict=True))
        return DecisionColumns(
            ids=np.array(c["ids"], dtype=object),
            status=np.array(c["status"], dtype=np.int8),
            act=np.array(c["act"], dtype=np.int8),
            risk=np.array(c["risk"], dtype=np.float64),
            fail=_objects(c["fail"]),
            harm=_objects(c["harm"]),
            src=_objects(c["src"]),
            latency_s=np.array(c["latency_s"], dtype=np.float64),
            tokens_in=np.array(c["tokens_in"], dtype=np.float64),
            tokens_out=np.array(c["tokens_out"], dtype=np.float64),
            warmup=np.array(c["warmup"], dtype=bool),
        )


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equal answers; two missing risks (NaN) are equal."""
    return a[:2] == b[:2] and (a[2] == b[2] or (math.isnan(a[2]) and math.isnan(b[2])))


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _number(v: Any) -> float:
    """A finite int or float as a float; anything else (None, a bool, a string) is NaN."""
    if v.__class__ is float or v.__class__ is int:
        return float(v) if math.isfinite(v) else math.nan
    return math.nan


def reduce_lines(data: bytes, name: str, vocab: Taxonomy | None = None) -> Reduced:
    """Reduce a predictions file's content (``name`` is the file its bad lines name)."""
    vocab = vocab or load_taxonomy()
    rows, bad = reader.scan_bytes(data, name, fast=True)
    b = _Builder(vocab)
    runs: list[Mapping[str, Any]] = []
    for row in rows:
        try:
            t = _FIELDS(row)
        except KeyError:  # a line without every key the writer writes
            t = tuple(row.get(k) for k in _KEYS)
        kind = t[0]
        if kind == "run":
            runs.append(row)
        elif kind == "decision":
            b.add(t[1], b.verdict(row, t, fast=not _maybe_unclean(row, t)), t)
    return Reduced(
        columns=b.columns(),
        runs=tuple(runs),
        bad=tuple((x.line, x.reason) for x in bad),
        repeated=tuple(sorted(b.repeated)),
        changed=tuple(sorted(b.changed)),
    )


def _maybe_unclean(row: Mapping[str, Any], t: tuple[Any, ...]) -> bool:
    """Whether a line's verdict may depend on more than its verdict tuple: a raw answer with a
    lone surrogate (only ``json.loads`` makes one; orjson refuses it) or a NaN risk or cite
    (NaN is not equal to itself, so it cannot key a table)."""
    raw = row.get("raw")
    if isinstance(raw, str) and not raw.isascii() and _has_surrogate(raw):
        return True
    return any(isinstance(v, float) and math.isnan(v) for v in (t[4], t[8]))


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# ------------------------------------------------------------------------------ the cache


@functools.lru_cache(maxsize=4)
def _code_fingerprint() -> str:
    h = hashlib.sha256(f"format {CACHE_FORMAT}\n".encode())
    for module in (verdict_rules, reader):
        h.update(Path(str(module.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def fingerprint(vocab: Taxonomy) -> str:
    """What, beside a file's content, decides its reduction: the cache format, the source of
    the validator, the line reader and this module, and the taxonomy's names (16 hex)."""
    h = hashlib.sha256(_code_fingerprint().encode())
    for name in _TAXONOMY_FIELDS:
        h.update(json.dumps(sorted(vocab.definitions(name))).encode())
    return h.hexdigest()[:16]


def load(path: Path, cache: Path | None, vocab: Taxonomy | None = None) -> Reduced:
    """The reduction of the file at ``path``: from ``cache`` when it holds one for this content
    and fingerprint, else read (and stored there when ``cache`` is given)."""
    vocab = vocab or load_taxonomy()
    data = path.read_bytes()
    if cache is None:
        return reduce_lines(data, str(path), vocab)
    entry = cache / f"{hashlib.sha256(data).hexdigest()}-{fingerprint(vocab)}.npz"
    got = _read_entry(entry)
    if got is not None:
        return got
    red = reduce_lines(data, str(path), vocab)
    _write_entry(entry, red)
    return red


def _write_entry(entry: Path, red: Reduced) -> None:
    """Store a reduction atomically (a temporary file moved into place); a cache that cannot be
    written is logged and skipped: it only costs the next run a parse."""
    c = red.columns
    table: list[str] = sorted(
        {v for f in _TAXONOMY_FIELDS for v in getattr(c, f).tolist() if v is not None}
    )
    code = {v: n for n, v in enumerate(table)}
    meta = {
        "ids": c.ids.tolist(),
        "runs": list(red.runs),
        "bad": [list(b) for b in red.bad],
        "repeated": list(red.repeated),
        "changed": list(red.changed),
        "table": table,
    }
    arrays = {
        "meta": np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
        **{f: getattr(c, f) for f in ("status", "act", "risk", *_TIMING, "warmup")},
        **{
            f: np.array([-1 if v is None else code[v] for v in getattr(c, f).tolist()], np.int16)
            for f in _TAXONOMY_FIELDS
        },
    }
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, entry)
    except OSError as e:
        log.warning("could not write the predictions cache %s (%s); it is only a cache", entry, e)


def _read_entry(entry: Path) -> Reduced | None:
    """A stored reduction, or None when there is none or it cannot be read."""
    if not entry.is_file():
        return None
    try:
        with np.load(entry, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
        table = np.array([*meta["table"], None], dtype=object)  # code -1 -> None
        columns = DecisionColumns(
            ids=_objects(meta["ids"]),
            **{f: arrays[f] for f in ("status", "act", "risk", *_TIMING, "warmup")},
            **{f: table[arrays[f]] for f in _TAXONOMY_FIELDS},
        )
        return Reduced(
            columns=columns,
            runs=tuple(meta["runs"]),
            bad=tuple((int(n), str(r)) for n, r in meta["bad"]),
            repeated=tuple(meta["repeated"]),
            changed=tuple(meta["changed"]),
        )
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as e:
        log.warning("ignoring the unreadable predictions cache %s (%s)", entry, e)
        return None
