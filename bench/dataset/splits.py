"""Dev/test splits: grouped so that related trajectories never straddle them, stratified, seeded.

Two trajectories are *linked* when they share anything that would let a judge tuned on one learn
the other: the same ``Trajectory.group`` (a StepShield ROGUE/CLEAN pair shares a task), the same
R-Judge injected attacker instruction (``metadata["attacker_template"]``, which supersedes the
group R-Judge sets from the user instruction; see LINK_KEYS for why), or a duplicate pair
(``metadata["duplicate_of"]``). Linked trajectories form components
(union-find); a whole component goes to one split.

Components are stratified by source and by the gold trajectory labels they hold (``safe``,
``unsafe`` or both), then assigned within each stratum, largest first and ties broken by a seeded
hash of the component's key, to whichever split is further below its share. Everything is a pure
function of the inputs and the seed: no global randomness, no dependence on input order.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bench.core.schema import Split, Trajectory, TrajectoryLabel

DEV_FRACTION = 0.3
"""Share of trajectories in ``dev`` (judges may fit or tune on it); the rest is ``test``."""

SEED = 20261130
"""Default seed of the split: changing it changes the dataset version."""

LINK_KEYS: tuple[str, ...] = ("attacker_template",)
"""Metadata fields whose equal values link trajectories of one source: R-Judge's injected
attacker instruction. R-Judge's 17 user instructions and 57 attacker instructions are crossed
into one connected bipartite graph, so linking on both would put all 414 injection records in a
single split; the attacker template (what makes a record unsafe, and what a tuned judge could
memorise) is the hard link, and a shared benign user instruction may cross splits."""

SUPERSEDES_GROUP = "attacker_template"
"""When a trajectory carries this metadata field, its ``group`` (R-Judge sets the user template
there) is not used as a link: the attacker template takes its place (see LINK_KEYS)."""

DUPLICATE_KEY = "duplicate_of"
"""Metadata field naming the trajectory (id or source id) a record duplicates."""


@dataclass(frozen=True)
class Component:
    """Trajectories that must share a split."""

    key: str
    """The smallest trajectory id in it (a stable name)."""
    source: str
    """Source of its trajectories (links never cross sources)."""
    members: tuple[str, ...]
    """Trajectory ids, sorted."""
    labels: tuple[str, ...]
    """Distinct gold trajectory labels among the members, sorted (the stratum)."""


@dataclass(frozen=True)
class SplitPlan:
    """The outcome of a split: where every trajectory goes and why."""

    assignment: Mapping[str, Split]
    """Trajectory id -> dev / test."""
    components: tuple[Component, ...]
    """Every component, sorted by key."""
    dev_fraction: float
    """The requested share of dev."""
    seed: int
    """The seed used for tie-breaking."""

    def largest(self) -> Component:
        """The biggest component (useful to spot a link that glued a source together)."""
        return max(self.components, key=lambda c: (len(c.members), c.key))


class _UnionFind:
    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {x: x for x in items}

    def find(self, x: str) -> str:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # the smaller id becomes the root, so roots do not depend on input order
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def link_keys(traj: Trajectory) -> list[str]:
    """The keys that link ``traj`` to others, namespaced by source."""
    keys = []
    meta = traj.metadata or {}
    if traj.group and meta.get(SUPERSEDES_GROUP) in (None, ""):
        keys.append(f"{traj.source}\x00group\x00{traj.group}")
    for name in LINK_KEYS:
        value = meta.get(name)
        if value not in (None, ""):
            keys.append(f"{traj.source}\x00{name}\x00{value}")
    return keys


def _duplicate_target(traj: Trajectory, ids: set[str]) -> str | None:
    dup = (traj.metadata or {}).get(DUPLICATE_KEY)
    if dup in (None, ""):
        return None
    for cand in (str(dup), f"{traj.source}:{dup}"):
        if cand in ids:
            return cand
    return None


def components(
    trajectories: Sequence[Trajectory], labels: Mapping[str, TrajectoryLabel]
) -> list[Component]:
    """Union-find over the links; ``labels`` gives each trajectory's gold label."""
    ids = {t.id for t in trajectories}
    uf = _UnionFind(ids)
    first_with: dict[str, str] = {}
    for t in sorted(trajectories, key=lambda t: t.id):
        for key in link_keys(t):
            if key in first_with:
                uf.union(first_with[key], t.id)
            else:
                first_with[key] = t.id
        dup = _duplicate_target(t, ids)
        if dup is not None:
            uf.union(dup, t.id)
    members: dict[str, list[str]] = defaultdict(list)
    source_of = {t.id: t.source for t in trajectories}
    for tid in ids:
        members[uf.find(tid)].append(tid)
    out = []
    for root, mem in members.items():
        mem.sort()
        out.append(
            Component(
                key=root,
                source=source_of[root],
                members=tuple(mem),
                labels=tuple(sorted({labels[m] for m in mem})),
            )
        )
    return sorted(out, key=lambda c: c.key)


def _tiebreak(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def assign(
    trajectories: Sequence[Trajectory],
    labels: Mapping[str, TrajectoryLabel],
    dev_fraction: float = DEV_FRACTION,
    seed: int = SEED,
) -> SplitPlan:
    """Assign every trajectory to dev or test: grouped, stratified by (source, labels), seeded.

    Within a stratum, components go largest first (ties by seeded hash) to dev when that keeps
    dev's count nearer its target ``dev_fraction * stratum size`` than test's, else to test.
    """
    if not 0.0 < dev_fraction < 1.0:
        raise ValueError(f"dev_fraction must be between 0 and 1, not {dev_fraction}")
    comps = components(trajectories, labels)
    strata: dict[tuple[str, tuple[str, ...]], list[Component]] = defaultdict(list)
    for c in comps:
        strata[(c.source, c.labels)].append(c)
    assignment: dict[str, Split] = {}
    for _, group in sorted(strata.items()):
        total = sum(len(c.members) for c in group)
        target_dev = dev_fraction * total
        dev = test = 0
        order = sorted(group, key=lambda c: (-len(c.members), _tiebreak(seed, c.key)))
        for c in order:
            n = len(c.members)
            # relative shortfall of each split after adding c; pick the one that stays more
            # balanced (dev wins exact ties only when it is under its target)
            dev_gap = abs((dev + n) - target_dev) + abs(test - (total - target_dev))
            test_gap = abs(dev - target_dev) + abs((test + n) - (total - target_dev))
            split: Split = "dev" if dev_gap < test_gap else "test"
            if split == "dev":
                dev += n
            else:
                test += n
            for m in c.members:
                assignment[m] = split
    return SplitPlan(
        assignment=dict(sorted(assignment.items())),
        components=tuple(comps),
        dev_fraction=dev_fraction,
        seed=seed,
    )
