"""The leaderboard as one JSON-able dict (``leaderboard.json``, layout in docs/metrics.md).

``build_report`` is a pure function of the ground-truth rows and meta, the chosen predictions
files, the judges.toml rows and the reward matrix. It scores every complete judge once
(``bench.report.scoring``: one set of stratified bootstrap draws for every figure) and assembles:

- the **macro headline**: each metric averaged over the headline sources (the upstream ones and
  the project's contrast pairs),
  with its interval; judges are ranked on it in tie groups. Pooled figures (every evaluated row
  together) are kept as secondary columns;
- the **shortcut reference lines** (``bench.report.shortcuts``): the best single-artefact probe
  per source, and each judge's margin over it, headline and per source;
- **breakdowns** by source, category, subset and level, every figure with its interval and n, small
  groups flagged (``bench.report.breakdowns``);
- the **hard subsets**: StepShield's twin pairs scored pairwise (``bench.report.hard``), the
  contrast pairs scored pairwise at k* per clue kind, distance bucket and domain
  (``bench.report.pairs``), and the diagnostic configs (StepShield's templated items), scored
  apart and never in the headline;
- the **lite board** (``bench.report.lite``): every judge that covers the lite split, scored
  there, judges with lite predictions only among them, and the lite-vs-full agreement;
- **robustness** (``bench.report.robustness``): every judge on the stress families' perturbed
  points against itself on the originals;
Probes (``role = "probe"``) are scored everywhere but never ranked. Every table and plot is
rendered from this dict alone (``bench.report.tables``, ``bench.report.plots``).

Beside the dict, ``build_outputs`` returns the paired statistics (``bench.metrics.paired``):
every judge's per-trajectory counts, from which the paired difference of any two judges is
computed when asked (the Space's Compare tab, ``leaderboard.py --compare``). The board itself
makes only the comparisons its tie groups need, at most one per judge and rank metric.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import IntegrityError
from bench.core.jsonl import canonical_json
from bench.core.labels import ACTS
from bench.core.paths import report_cache as report_cache_dir
from bench.core.verdict import ASK_UNSAFE_AT
from bench.judging.specs import unpinned
from bench.metrics.bootstrap import Bootstrap, Rank, tie_groups
from bench.metrics.inputs import CostMatrix, InvalidPolicy
from bench.metrics.paired import PairedStats
from bench.metrics.point import cost_per_thousand, latency_percentiles
from bench.metrics.spec import (
    BREAKDOWN_METRICS,
    HIGHER_IS_BETTER,
    METRICS,
    RANK_METRICS,
    SHORTCUT_METRICS,
    SPECS,
)
from bench.metrics.stats import ECE_BINS, RISK_FROM_ACT, check_rank_metric
from bench.report import breakdowns, hard, shortcuts
from bench.report import cache as report_cache
from bench.report.breakdowns import MIN_PER_CLASS
from bench.report.columns import DecisionColumns
from bench.report.inputs import JudgeInfo, PredictionFile
from bench.report.lite import FullBoard, lite_board
from bench.report.pairs import pairs_board
from bench.report.robustness import robustness
from bench.report.scoring import (
    BOOT_CHUNK,
    Headline,
    Scored,
    Settings,
    boots,
    cell,
    diagnostic_configs,
    evaluated_rows,
    headline,
    headline_sources,
    rnd,
    score,
)

SCHEMA = "foresight-leaderboard/2"
"""Version tag of the JSON layout (docs/metrics.md). 2: macro headline, probes and margins,
intervals on every breakdown, subsets, levels, twins, diagnostic configs, robustness."""
RESAMPLES = 1000
SEED = 20240601


def _cells(point: Mapping[str, float], boot: Bootstrap, judge: str) -> dict[str, Any]:
    return {m: cell(point[m], boot.samples[judge][m], boot.confidence) for m in METRICS}


def _weights(f: PredictionFile) -> list[dict[str, Any]]:
    """The distinct weights records of a file's run lines (what was actually loaded)."""
    seen: dict[str, dict[str, Any]] = {}
    for r in f.runs:
        w = r.get("weights")
        if isinstance(w, Mapping) and w:
            seen.setdefault(canonical_json(w), dict(w))
    return [seen[k] for k in sorted(seen)]


HUB_BACKENDS = ("transformers", "vllm", "hf-inference", "embedding")
"""Backends whose ``model`` is a Hugging Face Hub id when it looks like one (``org/name``)."""


def model_url(info: JudgeInfo | None) -> str | None:
    """The Hub page of a judge's model (at its pinned revision), when the model is a Hub id."""
    if info is None or info.backend not in HUB_BACKENDS or not info.model:
        return None
    m = info.model
    if m.startswith(("package:", "/", ".")) or m.count("/") != 1:
        return None
    return f"https://huggingface.co/{m}" + (f"/tree/{info.revision}" if info.revision else "")


def _describe(j: str, f: PredictionFile, info: JudgeInfo | None) -> dict[str, Any]:
    fitted = info.fitted_on_dev if info else None
    weights = _weights(f)
    return {
        "id": j,
        "display_name": info.display_name if info else j,
        "backend": info.backend if info else "",
        "role": info.role if info else "judge",
        "fitted_on_dev": fitted,
        "zero_shot": None if fitted is None else not fitted,
        "open_weights": info.open_weights if info else None,
        "model": info.model if info else "",
        "model_url": model_url(info),
        "revision": info.revision if info else "",
        "license": info.license if info else "",
        "submitted_by": info.submitted_by if info else "",
        "in_judges_toml": info is not None,
        "predictions": f.rel,
        "config_hash": f.config_hash,
        "weights": weights,
        "unpinned": info is not None and unpinned(info, weights),
    }


@dataclass(frozen=True)
class _Scoring:
    """What every entry is read from: the scored judges, the macro headline, the pooled
    bootstrap, the shortcut references and the tie groups of every rank metric."""

    sc: Scored
    h: Headline
    pooled: Bootstrap
    refs: Mapping[str, shortcuts.Reference]
    ranks: Mapping[str, Mapping[str, Rank]]
    rank_metric: str


def _hardware(f: PredictionFile) -> str:
    """The distinct hardware of a file's run lines, joined."""
    hw = {
        h if isinstance(h, str) else canonical_json(h) for r in f.runs if (h := r.get("hardware"))
    }
    return "; ".join(sorted(hw))


def _ranks(s: _Scoring, j: str, ranked: bool) -> dict[str, Any]:
    """A judge's rank, tie group and ranks by every rank metric (all None / {} for a probe)."""
    if not ranked:
        return {"rank": None, "tie_group": None, "ranks": {}}
    r = s.ranks
    return {
        "rank": r[s.rank_metric][j].rank,
        "tie_group": r[s.rank_metric][j].group,
        "ranks": {m: {"rank": r[m][j].rank, "tie_group": r[m][j].group} for m in RANK_METRICS},
    }


def _costs(c: DecisionColumns, f: PredictionFile, info: JudgeInfo | None) -> dict[str, Any]:
    """Latency (warm-up calls excluded) and cost per 1,000 decisions, from the judge's timing
    columns (NaN where a line gave no number, as the metrics expect)."""
    p50, p95, nlat = latency_percentiles(c.latency_s, c.warmup)
    price_in = info.price_input_per_mtok if info else None
    price_out = info.price_output_per_mtok if info else None
    cost = cost_per_thousand(c.tokens_in, c.tokens_out, c.warmup, price_in, price_out)
    return {
        "latency": {"p50_s": rnd(p50), "p95_s": rnd(p95), "n": nlat, "hardware": _hardware(f)},
        "cost_per_1000": rnd(cost),
    }


def _entry(
    s: _Scoring, j: str, ranked: bool, f: PredictionFile, info: JudgeInfo | None
) -> dict[str, Any]:
    """One judge's (or, not ``ranked``, probe's) entry."""
    score_ = s.sc.points[j]
    entry = _describe(j, f, info)
    entry.update(_ranks(s, j, ranked))
    entry.update(
        metrics=_cells(s.h.point[j], s.h.boot, j),
        pooled=_cells(score_.metrics, s.pooled, j),
        above_shortcuts=shortcuts.margins(s.h, s.refs, j) if ranked else {},
        counts=dict(score_.counts),
        risk_from_act=rnd(score_.risk_from_act),
        taxonomy={k: {"accuracy": rnd(a), "n": n} for k, (a, n) in score_.taxonomy.items()},
    )
    entry.update(_costs(s.sc.columns[j], f, info))
    entry["curves"] = {
        "roc": [[rnd(a), rnd(b)] for a, b in score_.roc],
        "reliability": [
            {"n": n, "mean_risk": rnd(c), "unsafe_share": rnd(u)} for n, c, u in score_.reliability
        ],
    }
    return entry


def _field(key: str) -> Callable[[Mapping[str, Any]], str]:
    """A ground-truth row's ``key`` as a string ('' when missing)."""
    return lambda r: str(r.get(key) or "")


def rank_key(metric: str) -> Callable[[Mapping[str, Any]], tuple[int, bool, float, str]]:
    """Sort key of judge entries for ``metric``: its tie-group rank, then the headline point
    estimate (undefined last), then id. The one ranking order: the tables and the rows the
    Space shows (``bench.report.rows``) both sort with it."""
    sign = 1 if HIGHER_IS_BETTER[metric] else -1

    def key(e: Mapping[str, Any]) -> tuple[int, bool, float, str]:
        rank = e["ranks"][metric]["rank"]
        value = e["metrics"][metric]["value"]
        return (rank if rank is not None else 10**9, value is None, -sign * (value or 0.0), e["id"])

    return key


def _by_source(
    sc: Scored,
    h: Headline,
    refs: Mapping[str, shortcuts.Reference],
    ranked: Sequence[str],
    everyone: Sequence[str],
    named: Mapping[str, np.ndarray],
    figures: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> dict[str, Any]:
    """Per source: the breakdown figures (``figures``: judge -> source -> metric -> cell),
    whether it is in the headline, the best probe there and every ranked judge's margin over
    it."""
    out = breakdowns.assemble(sc, named, figures, everyone)
    for s, g in out.items():
        g["headline"] = s in h.sources
        g["reference"] = {
            m: {"best_probe": r.best[s], "value": rnd(r.per_source[s])}
            for m, r in refs.items()
            if s in r.best
        }
        g["margins"] = {j: shortcuts.source_margins(h, refs, s, j) for j in ranked} if refs else {}
    return out


def _reviewed_sources(meta: Mapping[str, Any]) -> frozenset[str]:
    """The sources whose rows count only when reviewed: the headline's, when the ground truth's
    meta says ``headline_rows: reviewed`` (the build writes it); none otherwise."""
    if meta.get("headline_rows") != "reviewed":
        return frozenset()
    return frozenset(headline_sources(meta))


def _unreviewed(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    diag: frozenset[str],
    version: str,
    files: Mapping[str, PredictionFile],
    settings: Settings,
    folder: Path | None,
) -> dict[str, Any]:
    """The headline sources' unreviewed test rows, scored apart per source (never in the
    headline): sizes and every judge's figures with intervals."""
    rows = evaluated_rows(gt_rows, diag, reviewed_in=_reviewed_sources(meta), want_reviewed=False)
    out: dict[str, Any] = {}
    for source in sorted({str(r["source"]) for r in rows}):
        mine = [r for r in rows if str(r["source"]) == source]
        sc = score(gt_rows, mine, version, files, settings)
        g = _whole(sc, sorted(sc.preds), folder)
        g["not_scored"] = sorted(i["id"] for i in sc.incomplete)
        out[source] = g
    return out


def _diagnostic(
    gt_rows: Sequence[Mapping[str, Any]],
    diag: frozenset[str],
    version: str,
    files: Mapping[str, PredictionFile],
    settings: Settings,
    folder: Path | None,
) -> dict[str, Any]:
    """Each diagnostic config scored on its own (never in the headline): sizes and every judge's
    figures with intervals; judges whose file lacks its rows are listed, not scored."""
    out: dict[str, Any] = {}
    for config in sorted(diag):
        rows = [
            r
            for r in evaluated_rows(gt_rows, diag, want_diagnostic=True)
            if str(r.get("config")) == config
        ]
        if not rows:
            continue
        sc = score(gt_rows, rows, version, files, settings)
        g = _whole(sc, sorted(sc.preds), folder)
        g["not_scored"] = sorted(i["id"] for i in sc.incomplete)
        out[config] = g
    return out


def _ground_truth_summary(
    gt_rows: Sequence[Mapping[str, Any]],
    sc: Scored,
    sources: Sequence[str],
    diag: frozenset[str],
    gt_sha256: str,
) -> dict[str, Any]:
    gold = sc.gold
    steps = int(gold.scored.sum())
    unsafe = int((gold.scored & (gold.act > 0)).sum())
    return {
        "sha256": gt_sha256,
        "rows": len(gt_rows),
        "evaluated_rows": len(gold),
        "steps": steps,
        "unsafe_steps": unsafe,
        "safe_steps": steps - unsafe,
        "trajectories": len(sc.index),
        "unsafe_trajectories": int((sc.index.onset >= 0).sum()),
        "disputed_excluded": sum(
            1 for r in gt_rows if r.get("split") == "test" and r.get("disputed")
        ),
        "sources": sorted(set(gold.source.tolist())),
        "headline_sources": list(sources),
        "diagnostic_configs": sorted(diag),
        "review_coverage": review_coverage(gt_rows, sources),
        "diagnostic_rows": sum(
            1
            for r in gt_rows
            if r.get("split") == "test" and str(r.get("config") or r.get("source")) in diag
        ),
    }


def review_coverage(
    gt_rows: Sequence[Mapping[str, Any]], sources: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Per headline source: its non-disputed test trajectories, and how many of them a reviewer
    decided (the board's coverage line; the card gives the same per config)."""
    trajs: dict[str, dict[str, bool]] = {s: {} for s in sources}
    for r in gt_rows:
        s = str(r.get("source"))
        own_config = str(r.get("config") or s) == s
        if s in trajs and own_config and r.get("split") == "test" and not r.get("disputed"):
            trajs[s][str(r["trajectory_id"])] = bool(r.get("reviewed"))
    return {s: {"test_trajectories": len(t), "reviewed": sum(t.values())} for s, t in trajs.items()}


def _settings(
    rank_metric: str,
    policy: InvalidPolicy,
    resamples: int,
    seed: int,
    cost: CostMatrix,
    sources: Sequence[str],
    rows: str = "all",
) -> dict[str, Any]:
    return {
        "rank_metric": rank_metric,
        "rank_metrics": list(RANK_METRICS),
        "headline": {"kind": "macro", "sources": list(sources), "rows": rows},
        "shortcut_metrics": list(SHORTCUT_METRICS),
        "min_per_class": MIN_PER_CLASS,
        "matched_similarity": hard.MATCHED,
        "invalid_policy": policy,
        "resamples": resamples,
        "seed": seed,
        "bootstrap": "trajectories, stratified by source",
        "confidence": 0.95,
        "ask_unsafe_at": ASK_UNSAFE_AT,
        "risk_from_act": dict(RISK_FROM_ACT),
        "ece_bins": ECE_BINS,
        "cost_matrix": {
            g: dict(zip(ACTS, row, strict=True)) for g, row in zip(ACTS, cost.values, strict=True)
        },
    }


@dataclass(frozen=True)
class _Board:
    """The full board: the evaluated rows, every judge and probe scored, their entries."""

    version: str
    """The dataset version."""
    diag: frozenset[str]
    """The diagnostic configs (scored apart)."""
    rows: list[Mapping[str, Any]]
    """The evaluated ground-truth rows."""
    scoring: _Scoring
    """Scores, headline, references and tie groups."""
    role: dict[str, str]
    """Judge id -> its role (judge or probe)."""
    judges: list[dict[str, Any]]
    """The ranked judges' entries, in rank order."""
    probes: list[dict[str, Any]]
    """The probes' entries, best first."""

    @property
    def order(self) -> list[str]:
        """The ranked judges' ids in table order."""
        return [e["id"] for e in self.judges]

    @property
    def everyone(self) -> list[str]:
        """The ranked judges, then the probes."""
        return self.order + [e["id"] for e in self.probes]


def _evaluated(
    gt_rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]
) -> tuple[str, frozenset[str], list[Mapping[str, Any]]]:
    """(version, diagnostic configs, evaluated rows); IntegrityError when none is scored."""
    version = str(meta["dataset_version"])
    diag = diagnostic_configs(meta)
    rows = list(evaluated_rows(gt_rows, diag, reviewed_in=_reviewed_sources(meta)))
    if not rows:
        raise IntegrityError(
            f"ground truth {version!r} has no scored test row outside the diagnostic configs"
        )
    return version, diag, rows


def _score_board(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    files: Mapping[str, PredictionFile],
    judges: Mapping[str, JudgeInfo],
    settings: Settings,
    rank_metric: str,
    folder: Path | None = None,
) -> _Board:
    """Score every complete judge once, rank the judges in tie groups, order the probes;
    ``folder``: the report cache, where each judge's bootstrap samples are kept."""
    version, diag, rows = _evaluated(gt_rows, meta)
    sc = score(gt_rows, rows, version, files, settings)
    present = set(sc.traj_source.tolist())
    h = headline(sc, [s for s in headline_sources(meta) if s in present] or sorted(present), folder)
    role = {j: (judges[j].role if j in judges else "judge") for j in sc.preds}
    ranked = [j for j in sc.preds if role[j] != "probe"]
    probes = sorted(j for j in sc.preds if role[j] == "probe")
    ranks = {m: tie_groups({j: h.point[j][m] for j in ranked}, h.boot, m) for m in RANK_METRICS}
    pooled = boots(sc, {"all": None}, folder)["all"]
    s = _Scoring(sc, h, pooled, shortcuts.references(h, probes), ranks, rank_metric)
    entries = sorted(
        (_entry(s, j, True, files[j], judges.get(j)) for j in ranked), key=rank_key(rank_metric)
    )
    sign = 1.0 if HIGHER_IS_BETTER[rank_metric] else -1.0
    probe_entries = sorted(
        (_entry(s, j, False, files[j], judges.get(j)) for j in probes),
        key=lambda e: (-sign * (e["metrics"][rank_metric]["value"] or 0.0), e["id"]),
    )
    return _Board(version, diag, rows, s, role, entries, probe_entries)


def _breakdowns(board: _Board, folder: Path | None) -> dict[str, Any]:
    """by_source, by_category, by_subset and by_level; every judge's cells from the report
    cache in ``folder`` when it holds them (``bench.report.cache``), computed otherwise."""
    s = board.scoring
    sc, everyone = s.sc, board.everyone
    sections = {"by_source": breakdowns.groups(sc.traj_source)}
    for key in ("category", "subset", "level"):
        attr = breakdowns.trajectory_attribute(sc, board.rows, _field(key))
        sections[f"by_{key}"] = breakdowns.groups(attr, sc.traj_source)
    figures = _breakdown_cells(sc, sections, everyone, folder)
    out = {
        "by_source": _by_source(
            sc, s.h, s.refs, board.order, everyone, sections["by_source"],
            {j: figures[j]["by_source"] for j in everyone},
        )
    }  # fmt: skip
    for name, named in sections.items():
        if name != "by_source":
            out[name] = breakdowns.assemble(
                sc, named, {j: figures[j][name] for j in everyone}, everyone
            )
    return out


def _breakdown_cells(
    sc: Scored,
    sections: Mapping[str, Mapping[str, np.ndarray]],
    everyone: Sequence[str],
    folder: Path | None,
) -> dict[str, report_cache.Cells]:
    """Judge -> section -> group -> metric -> cell, each judge read from the cache or
    bootstrapped (only the judges the cache lacks, a chunk at a time)."""
    metrics = BREAKDOWN_METRICS
    assert sc.cost is not None
    board = report_cache.board_key(sections, sc.weights, sc.cost, 0.95, metrics)
    keys = {j: report_cache.judge_key(board, sc.stats[j]) for j in everyone}

    def compute(judges: Sequence[str]) -> dict[str, report_cache.Cells]:
        made = {
            name: breakdowns.judge_cells(sc, named, judges, metrics)
            for name, named in sections.items()
        }
        return {j: {name: made[name][j] for name in sections} for j in judges}

    return report_cache.judge_cells(everyone, keys, sections, metrics, compute, folder, BOOT_CHUNK)


def _whole(sc: Scored, judges: Sequence[str], folder: Path | None) -> dict[str, Any]:
    """One group of every trajectory of ``sc``: its sizes and every judge's cells (cached)."""
    named = {"all": np.ones(len(sc.index), dtype=bool)}
    figures = _breakdown_cells(sc, {"whole": named}, judges, folder)
    return breakdowns.assemble(sc, named, {j: figures[j]["whole"] for j in judges}, judges)["all"]


def _cache_folder(cache: Path | bool) -> Path | None:
    """The report cache folder a ``cache`` argument names: True, the default one
    (``bench.core.paths.report_cache``); False, none."""
    if cache is True:
        return report_cache_dir()
    return cache or None


def _not_yet(
    judges: Mapping[str, JudgeInfo], files: Mapping[str, PredictionFile]
) -> list[dict[str, Any]]:
    """Judges in judges.toml without predictions for this dataset version."""
    return [
        {
            "id": j,
            "display_name": info.display_name,
            "role": info.role,
            "reason": "no predictions for this dataset version",
        }
        for j, info in sorted(judges.items())
        if j not in files
    ]


def _generated_at(files: Mapping[str, PredictionFile]) -> str | None:
    """The newest run among the scored files: a property of the inputs, so regeneration stays
    byte-identical (docs/metrics.md)."""
    starts = sorted(
        str(r.get(k))
        for f in files.values()
        for r in f.runs
        for k in ("start", "start_time", "end")
        if r.get(k)
    )
    return starts[-1] if starts else None


def _hard_subsets(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    board: _Board,
    files: Mapping[str, PredictionFile],
    judges: Mapping[str, JudgeInfo],
    settings: Settings,
    folder: Path | None,
) -> dict[str, Any]:
    """twins, contrast pairs, diagnostic and lite: the boards scored apart from (or beside) the
    headline."""
    sc = board.scoring.sc
    position = {i: n for n, i in enumerate(sc.gold.ids.tolist())}
    twin_rows = [r for r in board.rows if "pair" not in r]  # contrast pairs are scored below
    twins = hard.pairwise(
        hard.twin_pairs(twin_rows), {j: sc.preds[j] for j in board.everyone}, position,
        settings.policy, settings.resamples, settings.seed,
    )  # fmt: skip
    contrast = pairs_board(
        board.rows, sc.gold.ids.tolist(), {j: sc.preds[j] for j in board.everyone},
        settings.policy, settings.resamples, settings.seed,
    )  # fmt: skip
    lite = lite_board(
        FullBoard(
            gt_rows, board.rows, board.version, files, settings, sc, board.scoring.h,
            board.order, board.role, board.scoring.rank_metric,
            {j: info.display_name for j, info in judges.items()},
        )
    )  # fmt: skip
    return {
        "twins": twins,
        "pairs": contrast,
        "diagnostic": _diagnostic(gt_rows, board.diag, board.version, files, settings, folder),
        "unreviewed": _unreviewed(
            gt_rows, meta, board.diag, board.version, files, settings, folder
        ),
        "lite": lite,
    }


def build_outputs(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    files: Mapping[str, PredictionFile],
    judges: Mapping[str, JudgeInfo],
    cost: CostMatrix,
    *,
    refused: Sequence[Mapping[str, str]] = (),
    superseded: Sequence[Mapping[str, str]] = (),
    stress: Mapping[str, Mapping[str, PredictionFile]] | None = None,
    stress_stale: Sequence[Mapping[str, str]] = (),
    rank_metric: str = "balanced_accuracy",
    policy: InvalidPolicy = "CONTINUE",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    gt_sha256: str = "",
    links: Mapping[str, str] | None = None,
    cache: Path | bool = True,
) -> tuple[dict[str, Any], PairedStats]:
    """(the whole leaderboard as one JSON-able dict, layout in docs/metrics.md; the paired
    statistics of every judge and probe, ``bench.metrics.paired``). ``links``: the project's
    pages (repository, judges.toml, pull requests), when known. ``cache``: where each judge's
    breakdown cells are kept between runs (``bench.report.cache``; True: the default
    ``bench.core.paths.report_cache()``, False: none). The result is a pure function of the
    other arguments: a cached cell is the cell computed, byte for byte."""
    check_rank_metric(rank_metric)
    settings = Settings(cost, policy, resamples, seed)
    folder = _cache_folder(cache)
    board = _score_board(gt_rows, meta, files, judges, settings, rank_metric, folder)
    sc, h, everyone = board.scoring.sc, board.scoring.h, board.everyone
    sources = h.sources
    hard_subsets = _hard_subsets(gt_rows, meta, board, files, judges, settings, folder)
    report = {
        "schema": SCHEMA,
        "dataset_version": board.version,
        "generated_at": _generated_at(files),
        "links": dict(links or {}),
        "ground_truth": _ground_truth_summary(gt_rows, sc, sources, board.diag, gt_sha256),
        "settings": _settings(
            rank_metric,
            policy,
            resamples,
            seed,
            cost,
            sources,
            "reviewed" if _reviewed_sources(meta) else "all",
        ),  # fmt: skip
        "metrics": [
            {
                "name": m.key,
                "label": m.short,
                "higher_is_better": m.higher_is_better,
                "rankable": m.rankable,
            }
            for m in SPECS
        ],
        "judges": board.judges,
        "probes": board.probes,
        "shortcut_reference": shortcuts.reference_json(board.scoring.refs, h.boot),
        **_breakdowns(board, folder),
        **hard_subsets,
        "robustness": robustness(sc, stress or {}, everyone, sources, policy, seed, stress_stale),
        "not_yet_evaluated": _not_yet(judges, files),
        "incomplete": sc.incomplete,
        "refused": list(refused),
        "superseded": list(superseded),
        "definitions": "docs/metrics.md",
        "plots": {
            k: f"plots/{k}.png"
            for k in (
                "roc",
                "accuracy_latency",
                "reliability",
                "trajectory_outcomes",
                "shortcuts",
                "foresight_depth",
            )  # fmt: skip
        },
    }
    return report, paired_stats(board, settings)


def build_report(
    gt_rows: Sequence[Mapping[str, Any]],
    meta: Mapping[str, Any],
    files: Mapping[str, PredictionFile],
    judges: Mapping[str, JudgeInfo],
    cost: CostMatrix,
    **options: Any,
) -> dict[str, Any]:
    """The whole leaderboard as one JSON-able dict (``build_outputs`` without the paired
    statistics; same keyword options). Pure."""
    return build_outputs(gt_rows, meta, files, judges, cost, **options)[0]


def paired_stats(board: _Board, settings: Settings) -> PairedStats:
    """Every judge's and probe's per-trajectory statistics with what the board's draws need
    (sources as the bootstrap's strata, the headline sources, seed and resamples), in table
    order: the paired difference of any two of them, recomputed, is the board's own."""
    sc, h = board.scoring.sc, board.scoring.h
    sources, strata = np.unique(sc.traj_source.astype(str), return_inverse=True)
    return PairedStats(
        judges=tuple(board.everyone),
        stats={j: sc.stats[j] for j in board.everyone},
        strata=strata.astype(np.int64),
        sources=tuple(str(x) for x in sources),
        headline=tuple(h.sources),
        cost=settings.cost,
        resamples=settings.resamples,
        seed=settings.seed,
        confidence=h.boot.confidence,
    )
