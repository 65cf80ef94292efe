"""A stress family's selection: the perturbed copies of a judging selection's points.

``python bench/decide.py --stress FAMILY`` judges these; it sits here, above ``bench.judging``,
so judging never needs to know the families (docs/FORMATS.md, "Layers").
"""

from __future__ import annotations

from dataclasses import replace

from bench.judging.local import Selection
from bench.stress import SEED, stress_points


def stress_selection(base: Selection, family: str, seed: int = SEED) -> Selection:
    """The perturbed copies ``family`` makes of the selection's non-disputed points."""
    originals = [p for p in base.points if p.id not in base.disputed]
    return replace(base, points=stress_points(originals, family, seed), stress=family)
