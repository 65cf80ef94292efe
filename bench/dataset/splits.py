"""Dev/test splits: grouped so that related trajectories never straddle them, stratified, seeded.

Two trajectories are *linked* when they share anything that would let a judge tuned on one learn
the other. Hard links always hold:

- ``group``: the adapter's grouping key (a StepShield ROGUE/CLEAN pair; an R-Judge duplicate
  pair; for R-Judge injection records it is superseded by the attacker template, see below);
- ``attacker_template``: R-Judge's injected attacker instruction (what makes a record unsafe);
- ``metadata["links"]``: links an adapter computed, such as ``task`` (a hash of the exact task
  text: StepShield reuses one task across pairs, and ASSEBench could) and ``attacker_tool`` (an
  ASSEBench attacker tool a record is offered or calls);
- ``duplicate_of``: a record that duplicates another.

Soft links hold only while the component they would make stays small: ``user_template``, the
benign user instruction of R-Judge's injection records. Its 17 user templates and 57 attacker
templates are crossed into one connected graph, so linking every user template would put all
414 injection records in one split. User templates are joined smallest first, each only when the
component it makes holds at most ``SOFT_CAP`` of its source's trajectories; the ones that could
not be joined are reported (``SplitPlan.soft_crossing``) and the leakage report counts them.

Components (union-find over the links) are stratified by config (a source, or a source's
diagnostic subset such as ``stepshield_synthetic``) and by the gold trajectory labels they hold
(``safe``, ``unsafe`` or both), then assigned within each stratum, largest first and ties broken
by a seeded hash of the component's key, to whichever split is further below its share. Pure:
no global randomness, no dependence on input order.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bench.core.schema import Split, Trajectory, TrajectoryLabel

DEV_FRACTION = 0.3
"""Share of trajectories in ``dev`` (judges may fit or tune on it); the rest is ``test``."""

SEED = 20261130
"""Default seed of the split: changing it changes the dataset version."""

SUPERSEDES_GROUP = "attacker_template"
"""When a trajectory carries this metadata field, its ``group`` (R-Judge sets the user template
there) is not a hard link: the attacker template takes its place and the user template becomes
the soft link ``user_template``."""

HARD_METADATA: tuple[str, ...] = ("attacker_template",)
"""Metadata fields whose equal values are hard links."""

SOFT_METADATA: tuple[str, ...] = ("user_template",)
"""Metadata fields whose equal values are soft links (joined while components stay small)."""

SOFT_CAP = 0.2
"""Largest share of its source's trajectories a component may reach by joining a soft link."""

DUPLICATE_KEY = "duplicate_of"
"""Metadata field naming the trajectory (id or source id) a record duplicates."""


@dataclass(frozen=True)
class Link:
    """One shared value that ties trajectories together."""

    kind: str
    """What is shared: group, task, attacker_tool, attacker_template, user_template, ..."""
    value: str
    """The shared value (namespaced by source)."""
    hard: bool
    """True when it must never cross the split."""


@dataclass(frozen=True)
class Component:
    """Trajectories that must share a split."""

    key: str
    """The smallest trajectory id in it (a stable name)."""
    source: str
    """Source of its trajectories (links never cross sources)."""
    stratum: str
    """The config its trajectories belong to (a source or a source's diagnostic subset)."""
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
    soft_joined: tuple[str, ...] = ()
    """Soft links (``kind:value``) kept whole."""
    soft_crossing: tuple[str, ...] = ()
    """Soft links that could not be joined without making a component too large."""

    def largest(self) -> Component:
        """The biggest component (useful to spot a link that glued a source together)."""
        return max(self.components, key=lambda c: (len(c.members), c.key))


class _UnionFind:
    def __init__(self, items: Iterable[str]) -> None:
        self.parent = {x: x for x in items}
        self.size = dict.fromkeys(self.parent, 1)

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
            self.size[lo] += self.size.pop(hi)


def links(traj: Trajectory) -> list[Link]:
    """Every link of ``traj``, namespaced by source (see the module docstring)."""
    meta = traj.metadata or {}
    out: list[Link] = []
    ns = traj.source
    if traj.group and meta.get(SUPERSEDES_GROUP) in (None, ""):
        out.append(Link("group", f"{ns}\x00{traj.group}", True))
    for name in HARD_METADATA:
        if meta.get(name) not in (None, ""):
            out.append(Link(name, f"{ns}\x00{meta[name]}", True))
    for name in SOFT_METADATA:
        if meta.get(name) not in (None, ""):
            out.append(Link(name, f"{ns}\x00{meta[name]}", False))
    extra = meta.get("links") or {}
    for kind in sorted(extra):
        for value in extra[kind] or ():
            out.append(Link(kind, f"{ns}\x00{value}", True))
    return out


def _duplicate_target(traj: Trajectory, ids: set[str]) -> str | None:
    dup = (traj.metadata or {}).get(DUPLICATE_KEY)
    if dup in (None, ""):
        return None
    for cand in (str(dup), f"{traj.source}:{dup}"):
        if cand in ids:
            return cand
    return None


def _hard_union(trajectories: Sequence[Trajectory], uf: _UnionFind, ids: set[str]) -> None:
    first_with: dict[tuple[str, str], str] = {}
    for t in sorted(trajectories, key=lambda t: t.id):
        for link in links(t):
            if not link.hard:
                continue
            key = (link.kind, link.value)
            if key in first_with:
                uf.union(first_with[key], t.id)
            else:
                first_with[key] = t.id
        dup = _duplicate_target(t, ids)
        if dup is not None:
            uf.union(dup, t.id)


def _soft_union(trajectories: Sequence[Trajectory], uf: _UnionFind) -> tuple[list[str], list[str]]:
    """Join soft links smallest first while the component stays within SOFT_CAP of its
    source; returns (joined, not joined) as ``kind:value``."""
    per_source: dict[str, int] = defaultdict(int)
    for t in trajectories:
        per_source[t.source] += 1
    holders: dict[tuple[str, str], list[str]] = defaultdict(list)
    source_of: dict[tuple[str, str], str] = {}
    for t in sorted(trajectories, key=lambda t: t.id):
        for link in links(t):
            if not link.hard:
                holders[(link.kind, link.value)].append(t.id)
                source_of[(link.kind, link.value)] = t.source
    joined, crossing = [], []
    for key in sorted(holders, key=lambda k: (len(holders[k]), k)):
        roots = {uf.find(m) for m in holders[key]}
        size = sum(uf.size[r] for r in roots)
        name = f"{key[0]}:{key[1].split(chr(0), 1)[1]}"
        if size <= SOFT_CAP * per_source[source_of[key]]:
            first = holders[key][0]
            for m in holders[key][1:]:
                uf.union(first, m)
            joined.append(name)
        elif len(roots) > 1:
            crossing.append(name)
        else:
            joined.append(name)  # already one component through hard links
    return joined, crossing


def components(
    trajectories: Sequence[Trajectory],
    labels: Mapping[str, TrajectoryLabel],
    stratum: Callable[[Trajectory], str] = lambda t: t.source,
) -> tuple[list[Component], list[str], list[str]]:
    """(components, soft links joined, soft links not joined): union-find over the links;
    ``labels`` gives each trajectory's gold label, ``stratum`` its config."""
    ids = {t.id for t in trajectories}
    uf = _UnionFind(ids)
    _hard_union(trajectories, uf, ids)
    joined, crossing = _soft_union(trajectories, uf)
    members: dict[str, list[str]] = defaultdict(list)
    by_id = {t.id: t for t in trajectories}
    for tid in ids:
        members[uf.find(tid)].append(tid)
    out = []
    for root, mem in members.items():
        mem.sort()
        strata = sorted({stratum(by_id[m]) for m in mem})
        out.append(
            Component(
                key=root,
                source=by_id[root].source,
                stratum="+".join(strata),
                members=tuple(mem),
                labels=tuple(sorted({labels[m] for m in mem})),
            )
        )
    return sorted(out, key=lambda c: c.key), joined, crossing


def _tiebreak(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def assign(
    trajectories: Sequence[Trajectory],
    labels: Mapping[str, TrajectoryLabel],
    dev_fraction: float = DEV_FRACTION,
    seed: int = SEED,
    stratum: Callable[[Trajectory], str] = lambda t: t.source,
) -> SplitPlan:
    """Assign every trajectory to dev or test: grouped, stratified by (config, labels), seeded.

    Within a stratum, components go largest first (ties by seeded hash) to dev when that keeps
    dev's count nearer its target ``dev_fraction * stratum size`` than test's, else to test.
    """
    if not 0.0 < dev_fraction < 1.0:
        raise ValueError(f"dev_fraction must be between 0 and 1, not {dev_fraction}")
    comps, joined, crossing = components(trajectories, labels, stratum)
    strata: dict[tuple[str, tuple[str, ...]], list[Component]] = defaultdict(list)
    for c in comps:
        strata[(c.stratum, c.labels)].append(c)
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
        soft_joined=tuple(joined),
        soft_crossing=tuple(crossing),
    )


def crossing_links(
    trajectories: Sequence[Trajectory], assignment: Mapping[str, Split]
) -> list[str]:
    """Every hard link whose trajectories landed in both splits (the build refuses them)."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for t in trajectories:
        for link in links(t):
            if link.hard:
                seen[(link.kind, link.value)].add(assignment[t.id])
    return sorted(
        f"{kind} {value.replace(chr(0), ':')}" for (kind, value), s in seen.items() if len(s) > 1
    )
