"""What blind verification of the contrast pairs found: kept, dropped and pending pairs, agreement
between reviewers (Cohen's kappa) and with the intended verdicts, and the drop rate per clue kind.

Read by ``bench pairs stats`` and by the dataset card, so both report the same figures.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.core.labels import UNSAFE_ACTS
from bench.labelling.agreement import cohen_kappa
from bench.sources.pair_verification import Verification, keep_status


@dataclass(frozen=True)
class Dropped:
    """A pair verification dropped, and why."""

    pair: str
    clue_kind: str
    reason: str


@dataclass(frozen=True)
class VerificationSummary:
    """Blind verification of the pairs, in figures."""

    written: int
    """Valid pair files."""
    kept: int
    """Pairs every reviewer recovered on both sides (the dataset's pairs)."""
    pending: int
    """Pairs still short of reviews."""
    dropped: tuple[Dropped, ...]
    """Pairs some reviewer did not recover, with the reason."""
    reviews: int
    """Single-side reviews counted (the authors' own never count)."""
    intended_agree: float | None
    """Share of reviews that recovered the intended binary verdict."""
    side_items: int
    """Sides with at least two reviews (the items kappa is computed on)."""
    act_agree: float | None
    """Share of those sides where the first two reviewers gave the same act."""
    kappa_act: float | None
    """Cohen's kappa between the first two reviewers of a side, on the act (3 classes)."""
    kappa_binary: float | None
    """The same on the binary projection (ASK/STOP vs CONTINUE)."""
    drop_rate_by_clue: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """clue kind -> (dropped, verified: kept + dropped)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "kept": self.kept,
            "pending": self.pending,
            "dropped": len(self.dropped),
            "reviews": self.reviews,
            "intended_agree": _r(self.intended_agree),
            "side_items": self.side_items,
            "act_agree": _r(self.act_agree),
            "kappa_act": _r(self.kappa_act),
            "kappa_binary": _r(self.kappa_binary),
            "drop_rate_by_clue": {k: list(v) for k, v in sorted(self.drop_rate_by_clue.items())},
            "drop_reasons": [d.__dict__ for d in self.dropped],
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def summarise(
    pairs: Sequence[Mapping[str, Any]], verdicts: Mapping[str, list[Verification]]
) -> VerificationSummary:
    """Figures over ``pairs`` (one ``metadata["pair"]`` mapping per valid pair: id, author,
    clue_kind) and the verification rows by pair id."""
    kept = pending = reviews = right = 0
    dropped: list[Dropped] = []
    verified_by_clue: Counter[str] = Counter()
    dropped_by_clue: Counter[str] = Counter()
    firsts: list[tuple[str, str]] = []
    for meta in pairs:
        pid, author, clue = meta["id"], meta["author"], meta["clue_kind"]
        rows = [r for r in verdicts.get(pid, []) if r.reviewer != author]
        reviews += len(rows)
        right += sum(_recovered(r) for r in rows)
        by_side: dict[str, list[Verification]] = defaultdict(list)
        for r in sorted(rows, key=lambda r: r.reviewer):
            by_side[r.side].append(r)
        firsts += [(rs[0].act, rs[1].act) for rs in by_side.values() if len(rs) >= 2]
        status = keep_status(pid, author, verdicts)
        if status.kept:
            kept += 1
            verified_by_clue[clue] += 1
        elif status.reason.startswith("dropped"):
            dropped.append(Dropped(pid, clue, status.reason))
            verified_by_clue[clue] += 1
            dropped_by_clue[clue] += 1
        else:
            pending += 1
    binary = [(_unsafe(a), _unsafe(b)) for a, b in firsts]
    return VerificationSummary(
        written=len(pairs),
        kept=kept,
        pending=pending,
        dropped=tuple(sorted(dropped, key=lambda d: d.pair)),
        reviews=reviews,
        intended_agree=right / reviews if reviews else None,
        side_items=len(firsts),
        act_agree=sum(a == b for a, b in firsts) / len(firsts) if firsts else None,
        kappa_act=cohen_kappa([a for a, _ in firsts], [b for _, b in firsts]),
        kappa_binary=cohen_kappa([a for a, _ in binary], [b for _, b in binary]),
        drop_rate_by_clue={c: (dropped_by_clue[c], n) for c, n in verified_by_clue.items()},
    )


def _unsafe(act: str) -> bool:
    return act in UNSAFE_ACTS


def _recovered(r: Verification) -> bool:
    return _unsafe(r.act) == (r.side == "A")
