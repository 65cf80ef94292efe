"""bench/splits.py: grouped, stratified, seeded, order-independent dev/test splits."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.core.schema import Policy, Trajectory
from bench.dataset.splits import (
    DEV_FRACTION,
    SOFT_CAP,
    Link,
    assign,
    components,
    crossing_links,
    links,
)


def traj(source: str, sid: str, group: str = "", **meta: Any) -> Trajectory:
    return Trajectory(
        id=f"{source}:{sid}",
        source=source,
        source_id=sid,
        category="c",
        scenario="",
        license="x",
        policy=Policy(),
        turns=(),
        group=group,
        metadata=meta,
    )


def labels_of(trajs: list[Trajectory], unsafe_every: int = 2) -> dict[str, Any]:
    return {t.id: "unsafe" if i % unsafe_every == 0 else "safe" for i, t in enumerate(trajs)}


def test_stepshield_pairs_share_a_split() -> None:
    trajs = [
        traj("stepshield", f"{n}-{kind}", group=f"task{n}") for n in range(40) for kind in "RC"
    ]
    labels = {t.id: "unsafe" if t.id.endswith("R") else "safe" for t in trajs}
    plan = assign(trajs, labels)
    for n in range(40):
        assert plan.assignment[f"stepshield:{n}-R"] == plan.assignment[f"stepshield:{n}-C"]
    dev = sum(s == "dev" for s in plan.assignment.values())
    assert abs(dev / len(trajs) - DEV_FRACTION) <= 0.05


def test_attacker_template_links_and_supersedes_the_user_template_group() -> None:
    # 4 user templates crossed with 6 attacker templates: linking on both would glue all 24
    trajs = [
        traj(
            "rjudge",
            f"{u}{a}",
            group=f"rjudge-inj:u{u}",
            user_template=f"u{u}",
            attacker_template=f"a{a}",
        )
        for u in range(4)
        for a in range(6)
    ]
    plan = assign(trajs, labels_of(trajs))
    assert len(plan.components) == 6
    for a in range(6):
        assert len({plan.assignment[f"rjudge:{u}{a}"] for u in range(4)}) == 1
    assert set(plan.assignment.values()) == {"dev", "test"}


def test_group_is_used_when_no_attacker_template() -> None:
    t = traj("rjudge", "1", group="rjudge-inj:u1", user_template="u1", attacker_template=None)
    assert links(t) == [
        Link("group", "rjudge\x00rjudge-inj:u1", True),
        Link("user_template", "rjudge\x00u1", False),
    ]


def test_duplicates_share_a_split_by_id_or_source_id() -> None:
    trajs = [traj("rjudge", str(i), group=f"rjudge:{i}") for i in range(30)]
    trajs.append(traj("rjudge", "200", group="rjudge:200", duplicate_of="rjudge:3"))
    trajs.append(traj("rjudge", "201", group="rjudge:201", duplicate_of="4"))
    plan = assign(trajs, labels_of(trajs))
    assert plan.assignment["rjudge:200"] == plan.assignment["rjudge:3"]
    assert plan.assignment["rjudge:201"] == plan.assignment["rjudge:4"]
    comp = next(c for c in plan.components if "rjudge:200" in c.members)
    assert comp.members == ("rjudge:200", "rjudge:3")


def test_links_never_cross_sources() -> None:
    trajs = [traj("a", "1", group="same"), traj("b", "1", group="same")]
    comps, _, _ = components(trajs, {t.id: "safe" for t in trajs})
    assert len(comps) == 2


def test_stratified_by_source_and_label() -> None:
    trajs = [traj(src, str(i), group=f"{src}{i}") for src in ("x", "y") for i in range(100)]
    labels = {t.id: "unsafe" if int(t.source_id) < 20 else "safe" for t in trajs}
    plan = assign(trajs, labels)
    for src in ("x", "y"):
        for lab in ("safe", "unsafe"):
            ids = [t.id for t in trajs if t.source == src and labels[t.id] == lab]
            dev = sum(plan.assignment[i] == "dev" for i in ids)
            assert round(DEV_FRACTION * len(ids)) - 1 <= dev <= round(DEV_FRACTION * len(ids)) + 1


def test_seed_changes_the_split_but_not_the_counts() -> None:
    trajs = [traj("s", str(i), group=str(i)) for i in range(60)]
    labels = labels_of(trajs)
    a, b = assign(trajs, labels, seed=1), assign(trajs, labels, seed=2)
    assert a.assignment != b.assignment
    assert Counter(a.assignment.values()) == Counter(b.assignment.values())


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=60),
    groups=st.integers(min_value=1, max_value=20),
    shuffle_seed=st.integers(min_value=0, max_value=10_000),
    frac=st.floats(min_value=0.1, max_value=0.9),
)
def test_deterministic_grouped_and_order_independent(
    n: int, groups: int, shuffle_seed: int, frac: float
) -> None:
    trajs = [traj("s", str(i), group=f"g{i % groups}") for i in range(n)]
    labels = labels_of(trajs, 3)
    plan = assign(trajs, labels, dev_fraction=frac)
    shuffled = list(trajs)
    random.Random(shuffle_seed).shuffle(shuffled)
    assert assign(shuffled, labels, dev_fraction=frac).assignment == plan.assignment
    assert set(plan.assignment) == {t.id for t in trajs}
    for c in plan.components:
        assert len({plan.assignment[m] for m in c.members}) == 1


def test_a_shared_task_links_different_pairs() -> None:
    # StepShield reuses one task across pairs: pairs 0..9 share task t0, 10..19 t1, ...
    trajs = [
        traj("stepshield", f"{n}-{kind}", group=f"pair{n}", links={"task": [f"t{n // 10}"]})
        for n in range(60)
        for kind in "RC"
    ]
    labels = {t.id: "unsafe" if t.id.endswith("R") else "safe" for t in trajs}
    plan = assign(trajs, labels)
    for task in range(6):
        members = [t.id for t in trajs if int(t.source_id.split("-")[0]) // 10 == task]
        assert len({plan.assignment[m] for m in members}) == 1
    assert crossing_links(trajs, plan.assignment) == []
    assert len(plan.components) == 6


def test_crossing_links_names_every_hard_link_that_straddles() -> None:
    trajs = [
        traj("assebench", "1", group="1", links={"attacker_tool": ["Steal"]}),
        traj("assebench", "2", group="2", links={"attacker_tool": ["Steal"]}),
        traj("assebench", "3", group="3", user_template="u"),
        traj("assebench", "4", group="4", user_template="u"),
    ]
    split = {
        "assebench:1": "dev",
        "assebench:2": "test",
        "assebench:3": "dev",
        "assebench:4": "test",
    }
    # the soft user_template link is not a refusal; the attacker tool is
    assert crossing_links(trajs, split) == ["attacker_tool assebench:Steal"]


def test_soft_links_join_while_small_and_are_reported_when_not() -> None:
    # 100 independent records; user template "small" spans 3 of them (under the cap), "big"
    # spans 40 (over SOFT_CAP of the source): the first is kept whole, the second reported
    trajs = [traj("rjudge", str(i), group=f"g{i}") for i in range(100)]
    for i in range(3):
        trajs[i] = traj("rjudge", str(i), group=f"g{i}", user_template="small")
    for i in range(10, 50):
        trajs[i] = traj("rjudge", str(i), group=f"g{i}", user_template="big")
    assert 3 <= SOFT_CAP * 100 < 40
    plan = assign(trajs, labels_of(trajs))
    assert plan.soft_joined == ("user_template:small",)
    assert plan.soft_crossing == ("user_template:big",)
    assert len({plan.assignment[f"rjudge:{i}"] for i in range(3)}) == 1
    assert len({plan.assignment[f"rjudge:{i}"] for i in range(10, 50)}) == 2


def test_a_diagnostic_config_is_its_own_stratum() -> None:
    # 20 synthetic unsafe records would all fall in one split by size order if they were
    # pooled with the real ones; stratified by config, each config keeps the dev share
    trajs = [traj("stepshield", f"r{i}", group=f"r{i}") for i in range(80)] + [
        traj("stepshield", f"s{i}", group=f"s{i}", synthetic=True) for i in range(20)
    ]
    labels = {t.id: "unsafe" for t in trajs}
    plan = assign(
        trajs,
        labels,
        stratum=lambda t: "stepshield_synthetic" if t.metadata.get("synthetic") else "stepshield",
    )
    dev_syn = sum(plan.assignment[f"stepshield:s{i}"] == "dev" for i in range(20))
    dev_real = sum(plan.assignment[f"stepshield:r{i}"] == "dev" for i in range(80))
    assert dev_syn == round(DEV_FRACTION * 20)
    assert dev_real == round(DEV_FRACTION * 80)
