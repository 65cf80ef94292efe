"""The lite split: a fixed, seeded, stratified subset of the test split for judges that are costly
to run (an LLM on a CPU, a paid API).

From each upstream source's test split (its headline config; disputed trajectories left out),
whole *units* are drawn: a StepShield ROGUE/CLEAN twin pair (``bench.dataset.twins``) is one
unit, any other trajectory is its own. Units are stratified by (subset, kind), kind being
``pair``, ``unsafe`` or ``safe``; each stratum gets its share of ``PER_SOURCE`` decision points
(at least one unit, so every subset is represented), filled in the order of a seeded hash of the
unit's first trajectory id; units holding an unsafe trajectory are then added, in the same order,
until the source has ``MIN_UNSAFE`` of them. The result depends only on the built records and ``SEED``, so it is
the same for a dataset version wherever it is built; the build writes it into the records
(``lite``), the ground truth and the card.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence

from bench.dataset.records import Record

PER_SOURCE = 200
"""Decision points per upstream source the lite split aims at (whole units, so a few more)."""

MIN_UNSAFE = 30
"""Unsafe trajectories each source's lite part holds at least (StepShield's long trajectories
would otherwise give 200 points with a handful of onsets): more units are drawn until it does."""

SEED = 20261201
"""Seed of the draw."""


def rule() -> dict[str, int]:
    """The parameters of the draw, as the ground truth's meta records them."""
    return {"seed": SEED, "per_source": PER_SOURCE, "min_unsafe": MIN_UNSAFE}


def _rank(key: str) -> str:
    return hashlib.sha256(f"{SEED}\x00{key}".encode()).hexdigest()


def lite_trajectories(
    records: Sequence[Record], sources: Sequence[str], per_source: int = PER_SOURCE
) -> frozenset[str]:
    """Trajectory ids of the lite split, from the test records of ``sources``' own configs."""
    pts: dict[str, int] = defaultdict(int)
    info: dict[str, Record] = {}
    twin_of: dict[str, str] = {}
    for r in records:
        if r.split != "test" or r.disputed or r.point.source not in sources:
            continue
        if (r.config or r.point.source) != r.point.source:
            continue  # a diagnostic config
        tid = r.point.trajectory_id
        pts[tid] += 1
        info.setdefault(tid, r)
        if r.twin:
            twin_of[tid] = r.twin.rsplit(":", 1)[0]
    paired = {p for t, p in twin_of.items() if p in pts}
    units: dict[str, list[str]] = {}
    for tid in sorted(pts):
        partner = twin_of.get(tid)
        if partner is not None and partner in pts:
            units[min(tid, partner)] = sorted((tid, partner))
        elif tid not in paired:
            units[tid] = [tid]
    chosen: set[str] = set()
    for source in sources:
        strata: dict[tuple[str, str], list[list[str]]] = defaultdict(list)
        for members in units.values():
            first = info[members[0]]
            if first.point.source != source:
                continue
            kind = "pair" if len(members) > 1 else first.trajectory_label
            strata[(first.point.subset, kind)].append(members)
        total = sum(pts[m] for group in strata.values() for u in group for m in u)
        if not total:
            continue
        target = min(per_source, total)
        for _, group in sorted(strata.items()):
            size = sum(pts[m] for u in group for m in u)
            quota = target * size / total
            taken = 0
            for u in sorted(group, key=lambda u: _rank(u[0])):
                if taken and taken >= quota:
                    break
                chosen.update(u)
                taken += sum(pts[m] for m in u)

        def unsafe_in(members: list[str]) -> int:
            return sum(info[m].trajectory_label == "unsafe" for m in members)

        mine = [u for group in strata.values() for u in group]
        have = sum(unsafe_in(u) for u in mine if u[0] in chosen)
        for u in sorted(
            (u for u in mine if unsafe_in(u) and u[0] not in chosen), key=lambda u: _rank(u[0])
        ):
            if have >= MIN_UNSAFE:
                break
            chosen.update(u)
            have += unsafe_in(u)
    return frozenset(chosen)
