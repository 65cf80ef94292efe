"""The dataset card's figures: per config counts, review coverage, defects and the lite table.

``config_stats`` turns one config's records and gold set into ``bench.dataset.card.ConfigStats``;
``lite_table`` summarises the lite split; ``bench.dataset.card`` renders them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from bench.core.labels import ACTS
from bench.dataset.card import ConfigStats
from bench.dataset.checks import Truncation
from bench.dataset.records import SPLITS, Record
from bench.labelling.agreement import Agreement
from bench.labelling.gold import GoldSet
from bench.sources.extraction import SourceData


def config_stats(
    src: SourceData,
    records: Sequence[Record],
    gold: GoldSet,
    trunc: Mapping[str, Truncation],
    name: str = "",
) -> ConfigStats:
    """The card's figures for one config (``name``, default the source's)."""
    subsets: Counter[str] = Counter()
    levels: Counter[str] = Counter()
    trajs: dict[str, set[str]] = defaultdict(set)
    tlabels: dict[str, Counter[str]] = defaultdict(Counter)
    points: Counter[str] = Counter()
    acts: dict[str, Counter[str]] = defaultdict(Counter)
    seen: set[str] = set()
    for r in records:
        assert r.point.gold is not None
        points[r.split] += 1
        acts[r.split][r.point.gold.act] += 1
        trajs[r.split].add(r.point.trajectory_id)
        if r.point.trajectory_id not in seen:
            seen.add(r.point.trajectory_id)
            tlabels[r.split][r.trajectory_label] += 1
            if r.point.subset:
                subsets[r.point.subset] += 1
            if r.point.level:
                levels[r.point.level] += 1
    defects = list(src.defects)
    n_traj = len(seen)
    unreviewed = n_traj - len(gold.reviewed & seen)
    if unreviewed and src.name != "sample":  # the sample's gold was written with the corpus
        defects.append(
            f"{unreviewed} of {n_traj} trajectories carry rule-proposed labels no reviewer has "
            "checked yet (provenance names the proposer)."
        )
    over = trunc.get("auditor", Truncation()).over_budget
    if over:
        defects.append(
            f"{over} auditor prompts exceed the default budget even with all history elided."
        )
    return ConfigStats(
        name=name or src.name,
        license=src.license,
        redistributable=src.redistributable,
        trajectories={s: len(trajs[s]) for s in SPLITS},
        points={s: points[s] for s in SPLITS},
        acts={s: {a: acts[s][a] for a in ACTS} for s in SPLITS},
        trajectory_labels={s: dict(sorted(tlabels[s].items())) for s in SPLITS},
        reviewed=len(gold.reviewed & seen),
        disputed=len(gold.disputed & seen),
        disputed_notes=tuple((t, n) for t, n in gold.disputed_notes.items() if t in seen),
        reviewers=gold.reviewers,
        moved=len(gold.moved & seen),
        # agreement is measured per source: a diagnostic config shares its source's reviews
        agreement="" if name and name != src.name else _agreement_text(gold.double_reviewed),
        truncation=dict(trunc),
        defects=tuple(defects),
        subsets=dict(sorted(subsets.items())),
        levels=dict(sorted(levels.items())),
        diagnostic=bool(name) and name != src.name,
        upstream=src.upstream,
        headline=src.headline and name == src.name,
    )


def _agreement_text(a: Agreement | None) -> str:
    """One line on reviewer-vs-reviewer agreement for the card ('' when nothing was double-reviewed)."""
    if a is None or not a.n:
        return ""

    def k(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    return (
        f"{a.n} trajectories reviewed twice, the second time blind: onset agreement "
        f"{a.onset_agree:.0%} (Cohen's kappa {k(a.kappa_onset)}), act agreement {a.act_agree:.0%} "
        f"(kappa {k(a.kappa_act)})"
    )


def lite_table(records: Sequence[Record]) -> tuple[tuple[str, str, int, int, int], ...]:
    """(source, subset, trajectories, decision points, unsafe trajectories) of the lite split."""
    trajs: dict[tuple[str, str], set[str]] = defaultdict(set)
    unsafe: dict[tuple[str, str], set[str]] = defaultdict(set)
    points: Counter[tuple[str, str]] = Counter()
    for r in records:
        if not r.lite:
            continue
        key = (r.point.source, r.point.subset or "-")
        trajs[key].add(r.point.trajectory_id)
        points[key] += 1
        if r.trajectory_label == "unsafe":
            unsafe[key].add(r.point.trajectory_id)
    return tuple(
        (s, sub, len(trajs[(s, sub)]), points[(s, sub)], len(unsafe[(s, sub)]))
        for s, sub in sorted(trajs)
    )
