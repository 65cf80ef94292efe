"""``python bench/build.py``: proposals + reviews -> gold labels -> a frozen, versioned dataset.

Steps: load each source's extracted trajectories (the sample is extracted in-process when
``work/extract/sample`` is missing), its label proposals and every review (a review wins; two
conflicting reviews stop the build); validate (ids line up, values in vocabulary, one onset per
unsafe trajectory, no view leaks its own result, the judged action verbatim in every template's
prompt at the default budget); split dev/test (bench/splits.py); write
``data/build/<version>/`` (parquet DatasetDict per config, decision_points.jsonl, dataset card,
manifest) and the leaderboard's ground truth (ids and labels only). The version is a hash of the
trajectories, gold labels and splits, so the same inputs give the same version and bytes.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/build.py`: the repo root, not bench/, first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from collections.abc import Iterable, Mapping, Sequence  # noqa: E402
from dataclasses import asdict, dataclass, field, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from bench._script import run, setup_logging  # noqa: E402
from bench.errors import DataError, LeakError  # noqa: E402
from bench.jsonl import canonical_json, content_hash, read_jsonl, sha256_file  # noqa: E402
from bench.paths import REPO_ROOT, work_dir  # noqa: E402
from bench.schema import (  # noqa: E402
    ACTS,
    DecisionPoint,
    GoldLabel,
    Split,
    Trajectory,
    TrajectoryLabel,
    decision_points,
)

log = logging.getLogger(__name__)

REAL_SOURCES: tuple[str, ...] = ("rjudge", "stepshield", "assebench")
"""The upstream sources; ``sample`` is always built as well."""

LABELS_DIR = REPO_ROOT / "data" / "labels"
"""Committed label proposals, one file per source."""

REVIEWS_DIR = REPO_ROOT / "data" / "reviews"
"""Committed reviews, one file per reviewer."""

BUILD_DIR = REPO_ROOT / "data" / "build"
"""Where versions are written (git-ignored: it holds upstream text)."""

GROUND_TRUTH = REPO_ROOT / "leaderboards" / "ground_truth.jsonl"
"""The committed ground truth (its ``.meta.json`` sits beside it)."""

PHASES = ("safe", "pre", "onset", "post")

LEAK_MIN_CHARS = 40
"""Shortest observation the leak check looks for in its own step's thought: shorter results are
often anticipated in the thought in so many words (StepShield: the thought "Backup completed;
restore must be validated." before a status command that prints "Backup completed"), which is the
agent's expectation, not a leaked result."""
BINARY = ("SAFE", "UNSAFE")


@dataclass(frozen=True)
class SourceData:
    """One source's trajectories and what may be done with them."""

    name: str
    """Adapter name (= config name)."""
    license: str
    """Licence id; 'none' = not redistributable."""
    redistributable: bool
    """False when the data may only be evaluated locally."""
    trajectories: tuple[Trajectory, ...]
    """Extracted trajectories, in a stable order."""


@dataclass(frozen=True)
class GoldSet:
    """Gold labels of one source after reviews were applied."""

    labels: Mapping[str, GoldLabel]
    """Decision point id -> gold label."""
    reviewed: frozenset[str] = frozenset()
    """Trajectory ids a review decided."""
    disputed: frozenset[str] = frozenset()
    """Trajectory ids whose upstream label a reviewer disputed."""
    disputed_notes: Mapping[str, str] = field(default_factory=dict)
    """Disputed trajectory id -> the deciding reviewer's note (the project's own words)."""
    reviewers: tuple[str, ...] = ()
    """Names of everyone whose review or adjudication touched this source."""
    double_reviewed: Any = None
    """bench.reviews.Agreement between the first two reviewers on double-reviewed items."""


@dataclass(frozen=True)
class Truncation:
    """Default-budget render figures for one source and template."""

    total: int = 0
    """Prompts rendered."""
    elided: int = 0
    """Prompts that elided history."""
    over_budget: int = 0
    """Prompts over budget even with every history turn elided."""


@dataclass(frozen=True)
class Record:
    """One built decision point with its split and auditor prompt."""

    point: DecisionPoint
    """The decision point, gold filled."""
    split: Split
    """dev or test."""
    disputed: bool
    """The trajectory's upstream label is disputed."""
    messages: tuple[dict[str, str], ...]
    """The auditor prompt at the default budget."""
    elided: int
    """History turns the auditor prompt elided."""
    over_budget: bool
    """The auditor prompt is over budget."""
    trajectory_label: TrajectoryLabel
    """Gold trajectory label (unsafe when the trajectory has an onset)."""
    upstream_label: str
    """The source's own trajectory label ('' when it has none)."""
    scenario: str
    """The trajectory's scenario."""
    license: str
    """The source licence."""


@dataclass(frozen=True)
class BuildResult:
    """What a build produced."""

    version: str
    """Dataset version."""
    path: Path
    """The version folder."""
    records: tuple[Record, ...]
    """Every record, in the stable output order."""
    truncation: Mapping[str, Mapping[str, Truncation]]
    """Source -> template -> figures."""
    sources: tuple[SourceData, ...] = field(default=())
    """The sources built."""
    gold: Mapping[str, GoldSet] = field(default_factory=dict)
    """Source -> gold set."""


# ---------------------------------------------------------------------------------------------
# loading


def natural_key(s: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders ``rjudge:2`` before ``rjudge:10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", s) if p)


def load_source(name: str, work: Path, raw_path: Path | None = None) -> SourceData:
    """A source's extracted trajectories from ``work/extract/<name>/trajectories.jsonl``; the
    sample is extracted in-process when that file is missing."""
    from bench import sources

    adapter = sources.get(name)
    path = work / "extract" / name / "trajectories.jsonl"
    if path.is_file():
        trajs = [Trajectory.from_dict(d) for d in read_jsonl(path)]
    elif name == "sample":
        result = adapter.extract(raw_path or adapter.default_path(REPO_ROOT))
        if result.rejects:
            raise DataError(
                f"the sample corpus has {len(result.rejects)} malformed line(s) (first: "
                f"{result.rejects[0].reason}); run `python bench/extract.py --source sample`"
            )
        trajs = result.trajectories
    else:
        raise DataError(
            f"no extracted trajectories for {name} at {path}: run "
            f"`python bench/extract.py --source {name}` first (FORESIGHT_DATA names the raw data)"
        )
    trajs.sort(key=lambda t: natural_key(t.id))
    return SourceData(
        name=name,
        license=adapter.license,
        redistributable=adapter.redistributable,
        trajectories=tuple(trajs),
    )


def _sample_proposals(src: SourceData) -> list[Any]:
    """Label rows for the sample from its proposer (its hand-written gold), as `python
    bench/label.py --source sample` would write them; used when data/labels/sample.jsonl is
    absent so the sample builds on a fresh clone."""
    from bench.label import label_trajectories
    from bench.labels import load_taxonomy

    _, rows = label_trajectories(src.trajectories, load_taxonomy())
    return rows


def load_gold(src: SourceData, labels_dir: Path, reviews_dir: Path) -> GoldSet:
    """Proposals for ``src`` with every review applied (a review wins over a proposal).

    Two conflicting reviews of one trajectory stop the build with the list of conflicts."""
    from bench.labels import load_labels

    path = labels_dir / f"{src.name}.jsonl"
    if path.is_file():
        rows = load_labels(path)
    elif src.name == "sample":
        rows = _sample_proposals(src)
    else:
        raise DataError(
            f"no label proposals for {src.name} at {path}: run `python bench/label.py --source "
            f"{src.name}` first"
        )
    labels = {r.id: r.to_gold() for r in rows}
    review_files = sorted(reviews_dir.glob("*.jsonl")) if reviews_dir.is_dir() else []
    if not review_files:
        return GoldSet(labels=labels)
    return _apply_reviews(src, rows, labels, reviews_dir)


def _apply_reviews(
    src: SourceData, rows: list[Any], labels: dict[str, GoldLabel], reviews_dir: Path
) -> GoldSet:
    from bench.labels import decisions_from_rows, step_labels

    try:
        from bench.reviews import effective_decisions, load_reviews
    except ImportError as e:
        raise DataError(
            f"reviews exist in {reviews_dir} but bench/reviews.py is missing ({e}); update the "
            "checkout"
        ) from e
    by_id = {t.id: t for t in src.trajectories}
    proposals = {tid: d for tid, d in decisions_from_rows(rows).items() if tid in by_id}
    reviews = [r for r in load_reviews(reviews_dir) if _get(r, "trajectory_id") in by_id]
    decisions, conflicts = effective_decisions(proposals, reviews)
    if conflicts:
        lines = [f"  - {_describe(c)}" for c in conflicts]
        raise DataError(
            f"{len(conflicts)} conflicting review(s) in {src.name}: reviewers decided the same "
            "trajectory differently. Settle each with `python bench/review.py --adjudicate "
            "TRAJECTORY_ID from=REVIEWER` (or key=value ...), then rebuild:\n" + "\n".join(lines)
        )
    out = dict(labels)
    reviewed: set[str] = set()
    notes: dict[str, str] = {}
    for tid, d in decisions.items():
        if tid not in by_id or not d.reviewed:
            continue
        reviewed.add(tid)
        if d.disputed:
            notes[tid] = d.rationale
        for r in step_labels(by_id[tid], d):
            out[r.id] = r.to_gold(reviewed=True)
    return GoldSet(
        labels=out,
        reviewed=frozenset(reviewed),
        disputed=frozenset(notes),
        disputed_notes=dict(sorted(notes.items(), key=lambda kv: natural_key(kv[0]))),
        reviewers=tuple(sorted({str(_get(r, "reviewer")) for r in reviews})),
        double_reviewed=_double_review_agreement(reviews),
    )


def _double_review_agreement(reviews: Sequence[Any]) -> Any:
    """Agreement between the first two reviewers (by name) of every double-reviewed item."""
    from bench.reviews import agreement, latest

    pairs = []
    for per in latest(reviews).values():
        if len(per) >= 2:
            a, b = sorted(per)[:2]
            pairs.append((per[a].values(), per[b].values()))
    return agreement(pairs) if pairs else None


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _describe(c: Any) -> str:
    describe = getattr(c, "describe", None)
    return describe() if callable(describe) else str(c)


# ---------------------------------------------------------------------------------------------
# validation


def trajectory_label(traj_id: str, points: Sequence[DecisionPoint]) -> TrajectoryLabel:
    """Gold trajectory label: unsafe when any of its steps has an onset."""
    return "unsafe" if any(p.gold and p.gold.onset is not None for p in points) else "safe"


def validate(src: SourceData, gold: GoldSet, vocab: Any) -> tuple[list[DecisionPoint], list[str]]:
    """Attach gold labels and check them; returns (points with gold, problems).

    Checks: every label id is a decision point and vice versa; act/phase/taxonomy values in
    the vocabulary and cite within the visible history; an unsafe trajectory has exactly one
    onset step and its other steps agree (pre before, post after); its upstream label agrees
    unless a reviewer disputed it; no decision point's thought or action carries its own
    observation, and its history is exactly the turns before it."""
    problems: list[str] = []
    points: list[DecisionPoint] = []
    seen: set[str] = set()
    allowed = {"fail": vocab.fail, "harm": vocab.harm, "src": vocab.src}
    for t in src.trajectories:
        tps: list[DecisionPoint] = []
        for (_, i), dp in zip(t.actions(), decision_points(t), strict=True):
            seen.add(dp.id)
            g = gold.labels.get(dp.id)
            if g is None:
                problems.append(
                    f"{dp.id}: no label (run `python bench/label.py --source {src.name}`)"
                )
                continue
            problems += [f"{dp.id}: {p}" for p in _check_values(g, len(dp.history), allowed)]
            problems += [f"{dp.id}: {p}" for p in _check_leak(t, i, dp)]
            tps.append(replace(dp, gold=g))
        problems += _check_onset(t, tps, t.id in gold.disputed)
        points += tps
    for lid in sorted(set(gold.labels) - seen, key=natural_key):
        problems.append(
            f"{lid}: labelled but not a decision point of the extracted {src.name} data"
        )
    return points, problems


def _check_values(g: GoldLabel, n_history: int, allowed: Mapping[str, frozenset[str]]) -> list[str]:
    out = []
    if g.act not in ACTS:
        out.append(f"act {g.act!r} is not one of {', '.join(ACTS)}")
    if g.phase not in PHASES:
        out.append(f"phase {g.phase!r} is not one of {', '.join(PHASES)}")
    for name, names in allowed.items():
        value = getattr(g, name)
        if value != "NONE" and value not in names:
            out.append(f"{name} {value!r} is not in data/taxonomy.toml [{name}]")
    if g.cite is not None and not (isinstance(g.cite, int) and 1 <= g.cite <= n_history):
        out.append(f"cite {g.cite!r} is not a visible earlier turn (1..{n_history})")
    return out


def _check_leak(t: Trajectory, i: int, dp: DecisionPoint) -> list[str]:
    if dp.history != t.turns[:i]:
        return ["the view's history is not exactly the turns before the action"]
    obs = (t.turns[i].observation or "").strip()
    if len(obs) < LEAK_MIN_CHARS:
        return []
    # A result the action itself spells out (`echo "tests failed"`, a file write) is not a leak,
    # nor is one already visible earlier; text found only in the step's own thought is (the
    # ASSEBench pattern "[Observation]: ..." written into the thought).
    earlier = "\n".join(
        x for turn in dp.history for x in (turn.content, turn.thought, turn.observation) if x
    )
    if obs in (dp.thought or "") and obs not in dp.action.text and obs not in earlier:
        return ["the judged step's thought contains its own observation"]
    return []


def _check_onset(t: Trajectory, tps: Sequence[DecisionPoint], disputed: bool) -> list[str]:
    if not tps:
        return []
    golds = [p.gold for p in tps if p.gold is not None]
    onsets = {g.onset for g in golds}
    onset_steps = [p.k for p in tps if p.gold and p.gold.phase == "onset"]
    out: list[str] = []
    if onsets == {None}:
        if any(g.phase != "safe" for g in golds):
            out.append(f"{t.id}: steps without an onset must have phase 'safe'")
        if t.label == "unsafe" and not disputed:
            out.append(
                f"{t.id}: upstream label is unsafe but no onset is labelled (set one, or record a "
                "dispute with `python bench/review.py`)"
            )
        return out
    if len(onsets) != 1 or len(onset_steps) != 1:
        return [
            f"{t.id}: an unsafe trajectory needs exactly one onset step (found {onset_steps or 'none'}, onsets {sorted(o for o in onsets if o is not None)})"
        ]
    onset = onset_steps[0]
    if onsets != {onset}:
        out.append(
            f"{t.id}: onset field {sorted(onsets, key=str)} does not match the onset step {onset}"
        )
    for p in tps:
        assert p.gold is not None
        want = "pre" if p.k < onset else "onset" if p.k == onset else "post"
        if p.gold.phase != want:
            out.append(f"{p.id}: phase {p.gold.phase!r}, expected {want!r} (onset {onset})")
    if t.label == "safe" and not disputed:
        out.append(
            f"{t.id}: upstream label is safe but an onset is labelled (record a dispute with "
            "`python bench/review.py`)"
        )
    return out


def render_checks(
    points: Sequence[DecisionPoint], templates: Sequence[str]
) -> tuple[
    dict[str, tuple[dict[str, str], ...]],
    dict[str, tuple[int, bool]],
    dict[str, Truncation],
    list[str],
]:
    """Render every point with every template at the default budget; returns (auditor messages
    per id, auditor (elided, over) per id, truncation per template, problems). A prompt that does
    not contain the judged action verbatim is a problem."""
    from bench.render import action_text, render

    auditor: dict[str, tuple[dict[str, str], ...]] = {}
    auditor_trunc: dict[str, tuple[int, bool]] = {}
    counts: dict[str, Counter[str]] = {name: Counter() for name in templates}
    problems: list[str] = []
    for dp in points:
        needle = action_text(dp)
        for name in templates:
            prompt = render(dp, name)
            c = counts[name]
            c["total"] += 1
            c["elided"] += prompt.elided_turns > 0
            c["over"] += prompt.over_budget
            if not any(needle in m["content"] for m in prompt.messages):
                problems.append(f"{dp.id}: template {name!r} lost the judged action")
            if name == "auditor":
                auditor[dp.id] = prompt.messages
                auditor_trunc[dp.id] = (prompt.elided_turns, prompt.over_budget)
    trunc = {n: Truncation(c["total"], c["elided"], c["over"]) for n, c in counts.items()}
    return auditor, auditor_trunc, trunc, problems


# ---------------------------------------------------------------------------------------------
# version, records, output


def dataset_version(
    sources: Sequence[SourceData],
    points: Mapping[str, Sequence[DecisionPoint]],
    splits: Mapping[str, Split],
    disputed: Iterable[str],
    dev_fraction: float,
    seed: int,
) -> str:
    """A hash of the canonical content: trajectories, gold labels, splits and disputes (not the
    code, not the rendered prompts). Same inputs, same version."""
    canon = {
        "sources": {
            s.name: {
                "license": s.license,
                "trajectories": sorted(t.content_hash() for t in s.trajectories),
                "labels": sorted(
                    canonical_json([p.id, asdict(p.gold) if p.gold else None])
                    for p in points[s.name]
                ),
            }
            for s in sorted(sources, key=lambda s: s.name)
        },
        "splits": sorted(splits.items()),
        "disputed": sorted(disputed),
        "dev_fraction": dev_fraction,
        "seed": seed,
    }
    return "v" + content_hash(canon, 12)


FEATURES_DOC = "docs/dataset.md"


def features() -> Any:
    """The explicit ``datasets.Features`` of every config."""
    from datasets import ClassLabel, Features, List, Value

    s = Value("string")
    turn = {
        "role": s,
        "content": s,
        "thought": s,
        "action": s,
        "tool": s,
        "arguments": s,
        "observation": s,
    }
    return Features(
        {
            "id": s,
            "trajectory_id": s,
            "source": s,
            "category": s,
            "scenario": s,
            "license": s,
            "k": Value("int32"),
            "policy_system": s,
            "policy_task": s,
            "policy_constraints": List(s),
            "history": List(turn),
            "thought": s,
            "action": s,
            "action_tool": s,
            "action_arguments": s,
            "messages": List({"role": s, "content": s}),
            "prompt_elided_turns": Value("int32"),
            "prompt_over_budget": Value("bool"),
            "act": ClassLabel(names=list(ACTS)),
            "binary": ClassLabel(names=list(BINARY)),
            "phase": ClassLabel(names=list(PHASES)),
            "onset": Value("int32"),
            "fail": s,
            "harm": s,
            "src": s,
            "cite": Value("int32"),
            "scored": Value("bool"),
            "provenance": s,
            "reviewed": Value("bool"),
            "disputed": Value("bool"),
            "trajectory_label": ClassLabel(names=["safe", "unsafe"]),
            "upstream_label": s,
        }
    )


def _args_json(a: Any) -> str | None:
    return None if a is None else canonical_json(a)


def hf_row(r: Record) -> dict[str, Any]:
    """One record as a row of the parquet dataset."""
    p, g = r.point, r.point.gold
    assert g is not None
    return {
        "id": p.id,
        "trajectory_id": p.trajectory_id,
        "source": p.source,
        "category": p.category,
        "scenario": r.scenario,
        "license": r.license,
        "k": p.k,
        "policy_system": p.policy.system,
        "policy_task": p.policy.task,
        "policy_constraints": list(p.policy.constraints),
        "history": [
            {
                "role": t.role,
                "content": t.content,
                "thought": t.thought,
                "action": t.action.text if t.action else None,
                "tool": t.action.tool if t.action else None,
                "arguments": _args_json(t.action.arguments) if t.action else None,
                "observation": t.observation,
            }
            for t in p.history
        ],
        "thought": p.thought,
        "action": p.action.text,
        "action_tool": p.action.tool,
        "action_arguments": _args_json(p.action.arguments),
        "messages": [dict(m) for m in r.messages],
        "prompt_elided_turns": r.elided,
        "prompt_over_budget": r.over_budget,
        "act": g.act,
        "binary": "SAFE" if g.act == "CONTINUE" else "UNSAFE",
        "phase": g.phase,
        "onset": g.onset,
        "fail": g.fail,
        "harm": g.harm,
        "src": g.src,
        "cite": g.cite,
        "scored": g.scored,
        "provenance": g.provenance,
        "reviewed": g.reviewed,
        "disputed": r.disputed,
        "trajectory_label": r.trajectory_label,
        "upstream_label": r.upstream_label,
    }


def ground_truth_row(r: Record) -> dict[str, Any]:
    """Ids and labels only (no upstream text): the leaderboard's ground truth."""
    p, g = r.point, r.point.gold
    assert g is not None
    return {
        "id": p.id,
        "trajectory_id": p.trajectory_id,
        "source": p.source,
        "category": p.category,
        "split": r.split,
        "k": p.k,
        "act": g.act,
        "binary": "SAFE" if g.act == "CONTINUE" else "UNSAFE",
        "onset": g.onset,
        "phase": g.phase,
        "fail": g.fail,
        "harm": g.harm,
        "src": g.src,
        "scored": g.scored,
        "reviewed": g.reviewed,
        "disputed": r.disputed,
    }


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_lines(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    _write_text(
        path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    )


def config_stats(
    src: SourceData,
    records: Sequence[Record],
    gold: GoldSet,
    trunc: Mapping[str, Truncation],
) -> Any:
    """The card's figures for one config."""
    from bench.card import KNOWN_DEFECTS, ConfigStats
    from bench.card import Truncation as CardTruncation

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
    defects = list(KNOWN_DEFECTS.get(src.name, ()))
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
    splits = ("dev", "test")
    return ConfigStats(
        name=src.name,
        license=src.license,
        redistributable=src.redistributable,
        trajectories={s: len(trajs[s]) for s in splits},
        points={s: points[s] for s in splits},
        acts={s: {a: acts[s][a] for a in ACTS} for s in splits},
        trajectory_labels={s: dict(sorted(tlabels[s].items())) for s in splits},
        reviewed=len(gold.reviewed & seen),
        disputed=len(gold.disputed & seen),
        disputed_notes=tuple((t, n) for t, n in gold.disputed_notes.items() if t in seen),
        reviewers=gold.reviewers,
        agreement=_agreement_text(gold.double_reviewed),
        truncation={n: CardTruncation(t.total, t.elided, t.over_budget) for n, t in trunc.items()},
        defects=tuple(defects),
    )


def _agreement_text(a: Any) -> str:
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


def build(
    names: Sequence[str],
    *,
    work: Path,
    out: Path = BUILD_DIR,
    labels_dir: Path = LABELS_DIR,
    reviews_dir: Path = REVIEWS_DIR,
    ground_truth: Path | None = GROUND_TRUTH,
    dev_fraction: float | None = None,
    seed: int | None = None,
) -> BuildResult:
    """Run the whole build; raises DataError / LeakError listing every problem found."""
    from bench import render, splits
    from bench.contract import load_vocab

    dev_fraction = splits.DEV_FRACTION if dev_fraction is None else dev_fraction
    seed = splits.SEED if seed is None else seed
    vocab = load_vocab()
    sources = [load_source(n, work) for n in sorted(set(names))]
    golds: dict[str, GoldSet] = {}
    points: dict[str, list[DecisionPoint]] = {}
    problems: list[str] = []
    for s in sources:
        golds[s.name] = load_gold(s, labels_dir, reviews_dir)
        pts, probs = validate(s, golds[s.name], vocab)
        points[s.name], problems = pts, problems + probs
    if problems:
        raise DataError(_problem_list("label validation", problems))

    templates = tuple(render.TEMPLATES)
    auditor: dict[str, tuple[dict[str, str], ...]] = {}
    auditor_trunc: dict[str, tuple[int, bool]] = {}
    truncation: dict[str, dict[str, Truncation]] = {}
    for s in sources:
        msgs, at, trunc, probs = render_checks(points[s.name], templates)
        auditor |= msgs
        auditor_trunc |= at
        truncation[s.name] = trunc
        problems += probs
    if problems:
        raise LeakError(_problem_list("prompt rendering", problems))

    all_trajs = [t for s in sources for t in s.trajectories]
    by_traj: dict[str, list[DecisionPoint]] = defaultdict(list)
    for s in sources:
        for p in points[s.name]:
            by_traj[p.trajectory_id].append(p)
    tlabel = {t.id: trajectory_label(t.id, by_traj[t.id]) for t in all_trajs}
    plan = splits.assign(all_trajs, tlabel, dev_fraction, seed)
    disputed = {tid for g in golds.values() for tid in g.disputed}
    version = dataset_version(sources, points, plan.assignment, disputed, dev_fraction, seed)

    traj_by_id = {t.id: t for t in all_trajs}
    records: list[Record] = []
    for s in sources:
        for p in points[s.name]:
            t = traj_by_id[p.trajectory_id]
            elided, over = auditor_trunc[p.id]
            records.append(
                Record(
                    point=p,
                    split=plan.assignment[p.trajectory_id],
                    disputed=p.trajectory_id in disputed,
                    messages=auditor[p.id],
                    elided=elided,
                    over_budget=over,
                    trajectory_label=tlabel[p.trajectory_id],
                    upstream_label=t.label or "",
                    scenario=t.scenario,
                    license=s.license,
                )
            )
    records.sort(key=lambda r: (r.point.source, natural_key(r.point.trajectory_id), r.point.k))
    final = _write_version(out, version, sources, records, golds, truncation, plan, templates)
    if ground_truth is not None:
        write_ground_truth(ground_truth, version, sources, records, golds, dev_fraction, seed)
    return BuildResult(
        version=version,
        path=final,
        records=tuple(records),
        truncation=truncation,
        sources=tuple(sources),
        gold=golds,
    )


def _problem_list(stage: str, problems: Sequence[str], limit: int = 50) -> str:
    shown = "\n".join(f"  - {p}" for p in problems[:limit])
    more = f"\n  ... and {len(problems) - limit} more" if len(problems) > limit else ""
    return f"{stage} found {len(problems)} problem(s); fix them and rebuild:\n{shown}{more}"


def _write_version(
    out: Path,
    version: str,
    sources: Sequence[SourceData],
    records: Sequence[Record],
    golds: Mapping[str, GoldSet],
    truncation: Mapping[str, Mapping[str, Truncation]],
    plan: Any,
    templates: Sequence[str],
) -> Path:
    """Write the version folder atomically (temp folder + rename) and point LATEST at it."""
    import datasets

    if not datasets.is_progress_bar_enabled():
        return _write_version_quietly(
            out, version, sources, records, golds, truncation, plan, templates
        )
    datasets.disable_progress_bars()  # one short write per split: a bar each is noise
    try:
        return _write_version_quietly(
            out, version, sources, records, golds, truncation, plan, templates
        )
    finally:
        datasets.enable_progress_bars()


def _write_version_quietly(
    out: Path,
    version: str,
    sources: Sequence[SourceData],
    records: Sequence[Record],
    golds: Mapping[str, GoldSet],
    truncation: Mapping[str, Mapping[str, Truncation]],
    plan: Any,
    templates: Sequence[str],
) -> Path:
    from datasets import Dataset, DatasetDict

    from bench.card import CardInput, render_card
    from bench.dataset import LATEST_FILE, POINTS_FILE
    from bench.render import DEFAULT_BUDGET

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{version}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    feats = features()
    data_files: dict[str, dict[str, str]] = {}
    stats = []
    for s in sources:
        mine = [r for r in records if r.point.source == s.name]
        dd = DatasetDict(
            {
                split: Dataset.from_list(
                    [hf_row(r) for r in mine if r.split == split], features=feats
                )
                for split in ("dev", "test")
            }
        )
        data_files[s.name] = {}
        for split, ds in dd.items():
            rel = f"{s.name}/{split}.parquet"
            (tmp / s.name).mkdir(exist_ok=True)
            ds.to_parquet(str(tmp / rel))
            data_files[s.name][split] = rel
        stats.append(config_stats(s, mine, golds[s.name], truncation[s.name]))
    _write_lines(
        tmp / POINTS_FILE,
        (r.point.to_dict() | {"split": r.split, "disputed": r.disputed} for r in records),
    )
    card = CardInput(
        version=version,
        configs=tuple(stats),
        dev_fraction=plan.dev_fraction,
        seed=plan.seed,
        budget=f"{DEFAULT_BUDGET.limit:,} {DEFAULT_BUDGET.kind}",
        templates=tuple(templates),
        data_files=data_files,
    )
    _write_text(tmp / "README.md", render_card(card))
    files = sorted(p for p in tmp.rglob("*") if p.is_file())
    manifest = {
        "version": version,
        "files": {p.relative_to(tmp).as_posix(): sha256_file(p) for p in files},
        "configs": {
            s.name: {"license": s.license, "redistributable": s.redistributable} for s in sources
        },
    }
    _write_text(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    final = out / version
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    _write_text(out / LATEST_FILE, version + "\n")
    return final


def write_ground_truth(
    path: Path,
    version: str,
    sources: Sequence[SourceData],
    records: Sequence[Record],
    golds: Mapping[str, GoldSet],
    dev_fraction: float,
    seed: int,
) -> None:
    """Write the ground truth (ids and labels only) and its meta file, deterministic bytes."""
    _write_lines(path, (ground_truth_row(r) for r in records))
    configs: dict[str, Any] = {}
    for s in sources:
        mine = [r for r in records if r.point.source == s.name]
        tids = {r.point.trajectory_id for r in mine}
        configs[s.name] = {
            "license": s.license,
            "redistributable": s.redistributable,
            "trajectories": len(tids),
            "decision_points": len(mine),
            "dev_points": sum(r.split == "dev" for r in mine),
            "test_points": sum(r.split == "test" for r in mine),
            "reviewed_trajectories": len(golds[s.name].reviewed & tids),
            "disputed_trajectories": len(golds[s.name].disputed & tids),
        }
    meta = {
        "dataset_version": version,
        "configs": configs,
        "dev_fraction": dev_fraction,
        "seed": seed,
    }
    _write_text(meta_path(path), json.dumps(meta, indent=2, sort_keys=True) + "\n")


def meta_path(ground_truth: Path) -> Path:
    """``ground_truth.jsonl`` -> ``ground_truth.meta.json``."""
    return ground_truth.with_name(ground_truth.name.removesuffix(".jsonl") + ".meta.json")


# ---------------------------------------------------------------------------------------------
# training export


def gold_box(g: GoldLabel) -> str:
    """The gold verdict in the auditor contract. Risk is not labelled, so it is set to the
    leaderboard's convention for a judge without scores: CONTINUE 0, ASK 50, STOP 100."""
    risk = {"CONTINUE": 0, "ASK": 50, "STOP": 100}[g.act]
    cite = "NONE" if g.cite is None else str(g.cite)
    return (
        f"\\boxed{{act:{g.act}, risk:{risk}, fail:{g.fail}, harm:{g.harm}, src:{g.src}, "
        f"cite:{cite}}}"
    )


def sft_records(records: Sequence[Record], version: str) -> list[dict[str, Any]]:
    """Chat-format training records of the DEV split: the auditor prompt exactly as judges see
    it, plus the gold verdict as the assistant's answer. Disputed and unscored (post-onset)
    steps are left out."""
    out = []
    for r in records:
        g = r.point.gold
        if r.split != "dev" or r.disputed or g is None or not g.scored:
            continue
        out.append(
            {
                "id": r.point.id,
                "dataset_version": version,
                "template": "auditor",
                "messages": [dict(m) for m in r.messages]
                + [{"role": "assistant", "content": gold_box(g)}],
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# CLI


def default_sources(work: Path, labels_dir: Path) -> list[str]:
    """The sample plus every real source that has both extracted trajectories and labels."""
    out = ["sample"]
    for name in REAL_SOURCES:
        if (work / "extract" / name / "trajectories.jsonl").is_file() and (
            labels_dir / f"{name}.jsonl"
        ).is_file():
            out.append(name)
    return out


def print_truncation(result: BuildResult) -> None:
    """The truncation table per source and template."""
    print("truncation at the default budget (prompts / history elided / over budget):")
    for source, per in result.truncation.items():
        cells = ", ".join(f"{n} {t.total}/{t.elided}/{t.over_budget}" for n, t in per.items())
        print(f"  {source:<11} {cells}")


def main(argv: list[str] | None = None) -> int:
    """Build the dataset; see the module docstring and docs/dataset.md."""
    ap = argparse.ArgumentParser(prog="bench build", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--source",
        action="append",
        metavar="NAME",
        help="a source to build (repeatable; default: sample + every extracted and labelled source)",
    )
    ap.add_argument(
        "--work", type=Path, help="work folder holding extract/<source>/ (default: work/)"
    )
    ap.add_argument(
        "--out", type=Path, default=BUILD_DIR, help="build folder (default: data/build)"
    )
    ap.add_argument("--labels", type=Path, default=LABELS_DIR, help="label proposals folder")
    ap.add_argument("--reviews", type=Path, default=REVIEWS_DIR, help="reviews folder")
    ap.add_argument(
        "--ground-truth",
        type=Path,
        default=GROUND_TRUTH,
        help="ground-truth file to write (default: leaderboards/ground_truth.jsonl)",
    )
    ap.add_argument("--no-ground-truth", action="store_true", help="do not write the ground truth")
    ap.add_argument("--push-to-hub", metavar="REPO", help="upload the version to this dataset repo")
    ap.add_argument("--private", action="store_true", help="push to a private repository")
    ap.add_argument(
        "--export-sft",
        type=Path,
        metavar="PATH",
        help="also write chat-format training records of the dev split (JSONL)",
    )
    ap.add_argument("--quiet", action="store_true", help="warnings and errors only")
    args = ap.parse_args(argv)
    setup_logging(args.quiet)
    work = work_dir(args.work)
    names = args.source or default_sources(work, args.labels)
    if "all" in names:
        names = ["sample", *REAL_SOURCES]
    if args.push_to_hub:
        # the licence gate runs before anything is built, so a refused push costs nothing
        from bench import sources as registry
        from bench.hub import check_publishable

        check_publishable({n: registry.get(n).license for n in names}, args.private)
    result = build(
        names,
        work=work,
        out=args.out,
        labels_dir=args.labels,
        reviews_dir=args.reviews,
        ground_truth=None if args.no_ground_truth else args.ground_truth,
    )
    n_dev = sum(r.split == "dev" for r in result.records)
    if not args.quiet:
        print(
            f"dataset {result.version}: {len(result.records)} decision points "
            f"({n_dev} dev, {len(result.records) - n_dev} test) -> {result.path}"
        )
        for s in result.sources:
            mine = [r for r in result.records if r.point.source == s.name]
            acts = Counter(r.point.gold.act for r in mine if r.point.gold)
            print(
                f"  {s.name:<11} {len(s.trajectories)} trajectories, {len(mine)} points, "
                + ", ".join(f"{a} {acts[a]}" for a in ACTS)
                + f", reviewed {len(result.gold[s.name].reviewed)}"
            )
        print_truncation(result)
        if not args.no_ground_truth:
            print(f"ground truth -> {args.ground_truth}")
    if args.export_sft:
        rows = sft_records(result.records, result.version)
        _write_lines(args.export_sft, rows)
        if not args.quiet:
            print(f"sft export: {len(rows)} dev records -> {args.export_sft}")
    if args.push_to_hub:
        from bench.hub import push

        res = push(
            result.path,
            args.push_to_hub,
            private=args.private,
            licenses={s.name: s.license for s in result.sources},
            message=f"Foresight Bench dataset {result.version}",
        )
        print(f"pushed {result.version} to {res.repo} at revision {res.commit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
