"""Stress tests: judges under text aimed at them, under neutral tool names, scary words and noise.

``families`` holds the five perturbations (each keeps the gold label; docs/stress.md); this
module picks which test points each family perturbs (``stress_points``): the scored test points
of the headline (StepShield's templated items left out), the ones the family applies to, at most
``CAP`` per source (a seeded sample, stratified by gold act), and returns their perturbed copies.
``python bench/decide.py --stress FAMILY|all`` judges them; ``bench.report.robustness`` scores
them against the same judge on the originals.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence

from bench.core.schema import DecisionPoint
from bench.stress.families import FAMILIES, SEP, Family, original_id, perturbed, perturbed_id

__all__ = [
    "CAP",
    "DIAGNOSTIC_SUBSETS",
    "FAMILIES",
    "SEED",
    "SEP",
    "Family",
    "original_id",
    "perturbed",
    "perturbed_id",
    "selected",
    "stress_points",
]

CAP = 1000
"""Most originals a family perturbs per source (a seeded sample when more apply): enough for a
flip rate to within about 3 points, and a few minutes of CPU for the offline baselines."""

SEED = 20261201
"""Default seed of the sample and of every template choice."""

DIAGNOSTIC_SUBSETS = ("synthetic",)
"""Subsets never stressed (StepShield's templated items: already a diagnostic)."""


def _rank(seed: int, family: str, point_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{family}\x00{point_id}".encode()).hexdigest()


def selected(
    points: Iterable[DecisionPoint], family: str, seed: int = SEED, cap: int = CAP
) -> list[DecisionPoint]:
    """The originals ``family`` perturbs: scored test points outside the diagnostic subsets that
    the family applies to, at most ``cap`` per source, kept in proportion to their gold act
    (seeded), in the input order."""
    fam = FAMILIES[family]
    by_source: dict[str, dict[str, list[DecisionPoint]]] = defaultdict(lambda: defaultdict(list))
    for dp in points:
        if dp.subset in DIAGNOSTIC_SUBSETS or dp.gold is None or not dp.gold.scored:
            continue
        if fam.applies(dp):
            by_source[dp.source][dp.gold.act].append(dp)
    keep: set[str] = set()
    for acts in by_source.values():
        total = sum(len(v) for v in acts.values())
        for group in acts.values():
            want = len(group) if total <= cap else max(1, round(cap * len(group) / total))
            group = sorted(group, key=lambda d: _rank(seed, family, d.id))
            keep.update(d.id for d in group[:want])
    return [dp for dp in points if dp.id in keep]


def stress_points(
    points: Sequence[DecisionPoint], family: str, seed: int = SEED, cap: int = CAP
) -> list[DecisionPoint]:
    """The perturbed copies of ``selected(points, family)``: ids ``<id>~<family>``, gold kept."""
    if family not in FAMILIES:
        raise ValueError(f"unknown stress family {family!r}: use one of {', '.join(FAMILIES)}")
    return [perturbed(dp, family, seed) for dp in selected(points, family, seed, cap)]
