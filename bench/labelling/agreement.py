"""Agreement between labellers: Cohen's kappa and onset/act agreement over paired decisions.

Used for proposer-vs-reviewer agreement (``bench/proposer_eval.py``, ``review.py --stats``) and
for reviewer-vs-reviewer agreement on blind double reviews (the dataset card).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two raters over the same items; None when undefined (no items, or
    chance agreement is 1 because both always give the same single category)."""
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired ratings, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[c] * cb[c] for c in ca.keys() | cb.keys()) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


@dataclass(frozen=True)
class Agreement:
    """Agreement between two sets of decisions on the same trajectories."""

    n: int
    """Paired items."""
    onset_agree: float
    """Share with the same onset (None = safe counts as a value)."""
    act_agree: float
    """Share with the same act at the onset (CONTINUE for safe)."""
    kappa_onset: float | None
    """Cohen's kappa on onset (k or 'none' as categories)."""
    kappa_act: float | None
    """Cohen's kappa on act at the onset."""


def _fmt(v: Any) -> str:
    return "none" if v is None else str(v)


def agreement(pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> Agreement:
    """Agreement over (values, values) pairs with ``onset`` and ``act`` keys."""
    on = [(_fmt(x["onset"]), _fmt(y["onset"])) for x, y in pairs]
    ac = [(x["act"] or "CONTINUE", y["act"] or "CONTINUE") for x, y in pairs]
    n = len(pairs)
    return Agreement(
        n=n,
        onset_agree=sum(a == b for a, b in on) / n if n else 0.0,
        act_agree=sum(a == b for a, b in ac) / n if n else 0.0,
        kappa_onset=cohen_kappa([a for a, _ in on], [b for _, b in on]),
        kappa_act=cohen_kappa([a for a, _ in ac], [b for _, b in ac]),
    )
