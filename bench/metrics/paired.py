"""The paired comparison of any two judges, from statistics the leaderboard writes once.

The board ranks judges in tie groups, which needs a paired difference only between a group's
first judge and the judges after it (``bench.metrics.bootstrap.tie_groups``: at most one
comparison per judge and metric). Every other pair (the Space's Compare tab,
``leaderboard.py --compare A B``) is computed when asked, from ``PairedStats``: each judge's
per-trajectory sufficient statistics (``bench.metrics.stats.JudgeStats``, integer counts) and
what the draws need (each trajectory's source, the headline sources, the seed and the number of
resamples, the reward matrix). The draws are regenerated from the seed, the two judges are
rescored on them source by source with ``bootstrap_stats`` and averaged with ``macro``: the same
code and the same numbers as the board's headline bootstrap (the counts are integers, so the
matrix products are exact whatever else shares them).

The file (``FILE``, written by ``bench.report.tables.render_all``) is an ``.npz``: a zip of
``.npy`` members with fixed dates, so its bytes are the same at every regeneration on a machine;
``content_digest`` hashes what it holds (names, dtypes, shapes, values), which is also the same
across machines whatever zlib compressed it (``leaderboard.py --check`` compares that). Members
are read when a judge is first asked for, so a reader of a large board loads two judges, not all.
Callers import from this module directly.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import IntegrityError
from bench.metrics.bootstrap import (
    Bootstrap,
    bootstrap_stats,
    macro,
    paired_interval,
    resample_weights,
)
from bench.metrics.inputs import CostMatrix
from bench.metrics.spec import PAIRED_METRICS
from bench.metrics.stats import JudgeStats, metrics_from_stats

FILE = "paired_stats.npz"
"""The file's name in the leaderboard's output folder."""
FORMAT = "foresight-paired-stats/1"
"""Version tag stored in the file (docs/metrics.md, "Paired differences")."""
DIGITS = 4
"""Decimal places of a difference and its interval, as leaderboard.json rounds every figure."""
_DATE = (1980, 1, 1, 0, 0, 0)  # the zip format's earliest date: no clock in the bytes


@dataclass(frozen=True, eq=False)
class PairedStats:
    """What a paired comparison of any two judges of one board needs."""

    judges: tuple[str, ...]
    """The board's judges then probes, in table order: a pair is computed in this order."""
    stats: Mapping[str, JudgeStats]
    """Judge -> its per-trajectory statistics (``risk_from_act`` is not carried: NaN on read)."""
    strata: np.ndarray
    """Each trajectory's source, as an index into ``sources`` (the bootstrap's strata)."""
    sources: tuple[str, ...]
    """Every source of the evaluated rows, sorted."""
    headline: tuple[str, ...]
    """The sources the headline averages, in its order."""
    cost: CostMatrix
    """The reward matrix."""
    resamples: int
    """Bootstrap resamples."""
    seed: int
    """Seed of the draws."""
    confidence: float
    """Coverage of the intervals."""

    @cached_property
    def weights(self) -> np.ndarray:
        """The board's draws, stratified by source (``resample_weights``), made once."""
        return resample_weights(len(self.strata), self.resamples, self.seed, strata=self.strata)

    def _masks(self) -> list[np.ndarray]:
        return [self.strata == self.sources.index(s) for s in self.headline]

    def boot(self, judges: Sequence[str]) -> Bootstrap:
        """The headline bootstrap of ``judges`` (mean over the headline sources of each
        source's bootstrap, resample by resample): the board's samples for these judges."""
        chosen = {j: self.stat(j) for j in judges}
        per = [
            bootstrap_stats(
                chosen, len(self.strata), self.cost, weights=self.weights, rows=m,
                resamples=self.resamples, seed=self.seed, confidence=self.confidence,
            )
            for m in self._masks()
        ]  # fmt: skip
        return macro(per)

    def point(self, judge: str) -> dict[str, float]:
        """A judge's headline point estimate of every metric: the mean over the headline
        sources of the metric on each source's summed statistics."""
        st = self.stat(judge)
        per = []
        for m in self._masks():
            got = metrics_from_stats(st.table[m].sum(axis=0), st.values, self.cost)
            per.append({k: float(v[0]) for k, v in got.items()})
        return {k: float(np.mean([p[k] for p in per])) for k in per[0]}

    def stat(self, judge: str) -> JudgeStats:
        """One judge's statistics; IntegrityError naming the judges held when unknown."""
        if judge not in self.stats:
            close = difflib.get_close_matches(judge, self.judges, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"{len(self.judges)} held"
            raise IntegrityError(
                f"judge {judge!r} is not in the paired statistics ({hint}); a judge scored "
                "since the last regeneration needs python bench/leaderboard.py"
            )
        return self.stats[judge]


def _rounded(x: float | None) -> float | None:
    if x is None or np.isnan(x):
        return None
    return round(float(x), DIGITS)


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def difference(ps: PairedStats, a: str, b: str) -> dict[str, dict[str, Any]]:
    """metric -> ``{"value", "ci": [lo, hi]}`` of a - b on every ``PAIRED_METRICS`` headline
    figure, rounded as leaderboard.json rounds (None where undefined). The pair is computed in
    table order and negated when ``b`` comes first, so A - B and B - A mirror each other
    exactly. {} when ``a == b``."""
    for j in (a, b):
        ps.stat(j)  # an unknown judge raises, naming the close matches
    if a == b:
        return {}
    first, second = (a, b) if ps.judges.index(a) < ps.judges.index(b) else (b, a)
    boot = ps.boot([first, second])
    pa, pb = ps.point(first), ps.point(second)
    out: dict[str, dict[str, Any]] = {}
    for m in PAIRED_METRICS:
        lo, hi = paired_interval(boot, first, second, m)
        out[m] = {"value": _rounded(pa[m] - pb[m]), "ci": [_rounded(lo), _rounded(hi)]}
    if first == a:
        return out
    return {
        m: {"value": _neg(d["value"]), "ci": [_neg(d["ci"][1]), _neg(d["ci"][0])]}
        for m, d in out.items()
    }


def significance(d: Mapping[str, Any] | None, higher_is_better: bool) -> str | None:
    """'yes: A better' / 'yes: B better' when the interval of a difference A - B (a cell of
    ``difference``) excludes 0, else 'no'; None when it has no interval."""
    if not d or d["value"] is None or d["ci"][0] is None:
        return None
    lo, hi = d["ci"]
    if lo > 0 or hi < 0:
        better_a = (d["value"] > 0) == higher_is_better
        return f"yes: {'A' if better_a else 'B'} better"
    return "no"


# --------------------------------------------------------------------------- the file


def _table_member(st: JudgeStats) -> np.ndarray:
    """A judge's table as stored: transposed (columns compress better) in the smallest
    unsigned type that holds its counts; IntegrityError if a count is not a whole number."""
    t = st.table
    if t.size and (t.min() < 0 or not np.array_equal(t, np.rint(t))):
        raise IntegrityError("paired statistics hold counts: a table value is not a whole number")
    dtype = np.min_scalar_type(int(t.max()) if t.size else 0)
    return np.ascontiguousarray(t.T.astype(dtype))


def _members(ps: PairedStats) -> Iterator[tuple[str, np.ndarray]]:
    yield "format", np.array(FORMAT)
    yield "judges", np.array(ps.judges, dtype=str)
    yield "sources", np.array(ps.sources, dtype=str)
    yield "headline", np.array(ps.headline, dtype=str)
    yield "strata", ps.strata.astype(np.min_scalar_type(max(len(ps.sources) - 1, 0)))
    yield "cost", ps.cost.array()
    yield "bootstrap", np.array([ps.resamples, ps.seed], dtype=np.int64)
    yield "confidence", np.array(ps.confidence, dtype=np.float64)
    for i, j in enumerate(ps.judges):
        st = ps.stat(j)
        yield f"values_{i}", st.values.astype(np.uint8)
        yield f"table_{i}", _table_member(st)


def to_bytes(ps: PairedStats) -> bytes:
    """The ``.npz`` file: deflated ``.npy`` members with fixed dates and modes, in a fixed
    order, so the same statistics give the same bytes (on one zlib). Pure."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, arr in _members(ps):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=False)
            z.writestr(info, member.getvalue(), compresslevel=6)
    return buf.getvalue()


class _Lazy(Mapping[str, JudgeStats]):
    """Judge -> statistics, each read from the open file on first use (thread-safe: the Space
    may compare two pairs at once)."""

    def __init__(self, npz: Any, judges: Sequence[str]) -> None:
        self._npz = npz
        self._index = {j: i for i, j in enumerate(judges)}
        self._cache: dict[str, JudgeStats] = {}
        self._lock = threading.Lock()

    def __getitem__(self, judge: str) -> JudgeStats:
        with self._lock:
            if judge not in self._cache:
                i = self._index[judge]
                table = self._npz[f"table_{i}"].T.astype(np.float64)
                values = self._npz[f"values_{i}"].astype(np.int64)
                self._cache[judge] = JudgeStats(table=table, values=values, risk_from_act=np.nan)
            return self._cache[judge]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def from_bytes(data: bytes) -> PairedStats:
    """The statistics of a file written by ``to_bytes``; IntegrityError when it is not one."""
    try:
        npz = np.load(io.BytesIO(data), allow_pickle=False)
        tag = str(npz["format"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise IntegrityError(
            f"not a paired-statistics file ({e}); regenerate it with python bench/leaderboard.py"
        ) from e
    if tag != FORMAT:
        raise IntegrityError(
            f"paired statistics in format {tag!r}, this code reads {FORMAT!r}: regenerate them "
            "with python bench/leaderboard.py"
        )
    judges = tuple(str(j) for j in npz["judges"])
    c = npz["cost"]
    resamples, seed = (int(x) for x in npz["bootstrap"])
    return PairedStats(
        judges=judges,
        stats=_Lazy(npz, judges),
        strata=npz["strata"].astype(np.int64),
        sources=tuple(str(s) for s in npz["sources"]),
        headline=tuple(str(s) for s in npz["headline"]),
        cost=CostMatrix(values=tuple((float(r[0]), float(r[1]), float(r[2])) for r in c)),
        resamples=resamples,
        seed=seed,
        confidence=float(npz["confidence"]),
    )


def read(path: Path) -> PairedStats:
    """``from_bytes`` of a file; IntegrityError saying how to make it when it is missing."""
    if not path.is_file():
        raise IntegrityError(
            f"no paired statistics at {path}: run python bench/leaderboard.py to write them"
        )
    return from_bytes(path.read_bytes())


def content_digest(data: bytes) -> str:
    """sha256 over every member's name, dtype, shape and values, in file order: equal for
    files that hold the same statistics even when another zlib compressed them."""
    h = hashlib.sha256()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in z.namelist():
            arr = np.lib.format.read_array(io.BytesIO(z.read(name)), allow_pickle=False)
            h.update(f"{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()
