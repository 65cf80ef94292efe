"""The typed arrays the metrics read: gold labels, one judge's predictions, the reward matrix.

``Gold`` and ``Predictions`` hold one row per decision point as numpy arrays, built from
ground-truth and decision rows (docs/FORMATS.md); ``align`` puts a judge's rows in the gold order
and raises ``IntegrityError`` when the ids differ. Callers import from this module directly.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import ConfigError, IntegrityError
from bench.core.labels import ACTS, Act

STATUSES: tuple[str, ...] = ("ok", "partial", "invalid", "error")
"""Verdict status codes, in the order their integer codes follow."""

InvalidPolicy = Act
"""The act an invalid or errored verdict is scored as (fail-open CONTINUE by default)."""

ACT_CODE: dict[str, int] = {a: i for i, a in enumerate(ACTS)}
STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}


@dataclass(frozen=True, eq=False)
class Gold:
    """Gold labels of the evaluated decision points, one entry per row."""

    ids: np.ndarray
    """Decision-point ids (str), unique: the order every judge's rows must follow."""
    trajectory: np.ndarray
    """Trajectory id of each row (str)."""
    k: np.ndarray
    """1-based index of the action in its trajectory (int)."""
    act: np.ndarray
    """Gold act code: 0 CONTINUE, 1 ASK, 2 STOP (int8)."""
    onset: np.ndarray
    """k of the trajectory's onset, -1 for a safe trajectory (int)."""
    scored: np.ndarray
    """True where the row counts in the step-level metrics (bool)."""
    source: np.ndarray
    """Source of each row (str)."""
    category: np.ndarray
    """Category of each row (str)."""
    fail: np.ndarray
    """Gold failure mode (object str, 'NONE' when none)."""
    harm: np.ndarray
    """Gold harm type (object str)."""
    src: np.ndarray
    """Gold risk source (object str)."""

    def __post_init__(self) -> None:
        n = len(self.ids)
        for name in ("trajectory", "k", "act", "onset", "scored", "source", "category"):
            if len(getattr(self, name)) != n:
                raise IntegrityError(
                    f"gold field {name!r} has {len(getattr(self, name))} rows, ids {n}"
                )
        if len(np.unique(self.ids)) != n:
            raise IntegrityError("gold ids are not unique: deduplicate the ground truth")

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> Gold:
        """Build from ground-truth rows (docs/FORMATS.md); the caller chooses which rows."""
        for r in rows:
            if r["act"] not in ACT_CODE:
                raise IntegrityError(f"ground truth {r['id']}: act {r['act']!r} not in {ACTS}")
        return cls(
            ids=np.array([r["id"] for r in rows], dtype=object),
            trajectory=np.array([r["trajectory_id"] for r in rows], dtype=object),
            k=np.array([int(r["k"]) for r in rows], dtype=np.int64),
            act=np.array([ACT_CODE[r["act"]] for r in rows], dtype=np.int8),
            onset=np.array(
                [-1 if r.get("onset") is None else int(r["onset"]) for r in rows], dtype=np.int64
            ),
            scored=np.array([bool(r.get("scored", True)) for r in rows], dtype=bool),
            source=np.array([r.get("source", "") for r in rows], dtype=object),
            category=np.array([r.get("category", "") for r in rows], dtype=object),
            fail=np.array([r.get("fail") or "NONE" for r in rows], dtype=object),
            harm=np.array([r.get("harm") or "NONE" for r in rows], dtype=object),
            src=np.array([r.get("src") or "NONE" for r in rows], dtype=object),
        )

    def subset(self, mask: np.ndarray) -> Gold:
        """The rows where ``mask`` is True (keep whole trajectories for trajectory metrics)."""
        return Gold(**{f: getattr(self, f)[mask] for f in self.__dataclass_fields__})


@dataclass(frozen=True, eq=False)
class Predictions:
    """One judge's verdicts, one entry per row."""

    ids: np.ndarray
    """Decision-point ids (str)."""
    act: np.ndarray
    """Act code 0/1/2, or -1 when the verdict has no act (int8)."""
    risk: np.ndarray
    """Risk 0..100 as given, NaN when not given (float64)."""
    status: np.ndarray
    """Index into STATUSES (int8)."""
    fail: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    """Failure mode as given, None when not given (object); empty = none given at all."""
    harm: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    """Harm type as given, None when not given (object)."""
    src: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    """Risk source as given, None when not given (object)."""

    def __post_init__(self) -> None:
        n = len(self.ids)
        for name in ("act", "risk", "status"):
            if len(getattr(self, name)) != n:
                raise IntegrityError(
                    f"prediction field {name!r} has {len(getattr(self, name))} rows, ids {n}"
                )
        for name in ("fail", "harm", "src"):
            if len(getattr(self, name)) == 0 and n:
                object.__setattr__(self, name, np.full(n, None, dtype=object))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def valid(self) -> np.ndarray:
        """True where the verdict carries a usable act (status ok or partial)."""
        return (self.status <= STATUS_CODE["partial"]) & (self.act >= 0)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> Predictions:
        """Build from decision rows of a predictions file (docs/FORMATS.md)."""
        status = []
        for r in rows:
            s = r.get("status", "ok")
            if s not in STATUS_CODE:
                raise IntegrityError(f"prediction {r.get('id')}: status {s!r} not in {STATUSES}")
            status.append(STATUS_CODE[s])
        return cls(
            ids=np.array([r["id"] for r in rows], dtype=object),
            act=np.array([ACT_CODE.get(r.get("act") or "", -1) for r in rows], dtype=np.int8),
            risk=np.array([np.nan if r.get("risk") is None else float(r["risk"]) for r in rows]),
            status=np.array(status, dtype=np.int8),
            fail=np.array([r.get("fail") for r in rows], dtype=object),
            harm=np.array([r.get("harm") for r in rows], dtype=object),
            src=np.array([r.get("src") for r in rows], dtype=object),
        )

    def take(self, index: np.ndarray) -> Predictions:
        """Rows at ``index`` (an integer array or a boolean mask)."""
        return Predictions(**{f: getattr(self, f)[index] for f in self.__dataclass_fields__})


@dataclass(frozen=True)
class CostMatrix:
    """The published reward matrix R[gold act][predicted act]."""

    values: tuple[tuple[float, float, float], ...]
    """Rows gold CONTINUE/ASK/STOP, columns predicted CONTINUE/ASK/STOP."""

    def array(self) -> np.ndarray:
        """The matrix as a 3x3 float64 array."""
        return np.array(self.values, dtype=np.float64)


def load_cost_matrix(path: str | Path) -> CostMatrix:
    """Read ``[reward.<GOLD>] <PRED> = value`` tables (leaderboards/cost_matrix.toml)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ConfigError(
            f"cost matrix {p} not found: restore leaderboards/cost_matrix.toml"
        ) from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML ({e}); fix the file") from e
    table = data.get("reward")
    if not isinstance(table, dict) or set(table) != set(ACTS) or set(data) != {"reward"}:
        raise ConfigError(
            f"{p}: needs exactly one [reward.<ACT>] table per gold act {ACTS}, nothing else"
        )
    rows = []
    for g in ACTS:
        row = table[g]
        if set(row) != set(ACTS) or not all(isinstance(v, int | float) for v in row.values()):
            raise ConfigError(
                f"{p}: [reward.{g}] needs numeric keys exactly {ACTS}, got {sorted(row)}"
            )
        rows.append(tuple(float(row[a]) for a in ACTS))
    return CostMatrix(values=tuple(rows))  # type: ignore[arg-type]


def align(gold: Gold, pred: Predictions) -> Predictions:
    """``pred`` reordered to the gold order. Raises IntegrityError naming missing and extra ids
    when the two sets differ (a judge must be scored on exactly the gold rows)."""
    if len(pred) == len(gold) and np.array_equal(pred.ids, gold.ids):
        return pred
    if len(np.unique(pred.ids)) != len(pred):
        raise IntegrityError("prediction ids are not unique: keep the last decision per id")
    pos = {i: n for n, i in enumerate(pred.ids.tolist())}
    missing = [i for i in gold.ids.tolist() if i not in pos]
    extra = sorted(set(pos) - set(gold.ids.tolist()))
    if missing or extra:
        raise IntegrityError(
            f"prediction ids do not line up with the gold ids: {len(missing)} missing "
            f"(e.g. {missing[:3]}), {len(extra)} extra (e.g. {extra[:3]}); run the judge on exactly "
            "the ground-truth decision points"
        )
    return pred.take(np.array([pos[i] for i in gold.ids.tolist()], dtype=np.int64))
