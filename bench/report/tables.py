"""Rendering of the leaderboard report: markdown, CSV and HTML tables.

Every function reads only the report dict of ``bench.report.report.build_report``; the
markdown and HTML share the table list of ``tables``; the rows the Space shows are
``bench.report.rows``. ``render_all`` writes every output (plots
through ``bench.report.plots``); the --check comparison of committed outputs is
``bench.report.check.compare``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core.paths import REPORT_TEMPLATES
from bench.metrics.paired import FILE as PAIRED_STATS
from bench.metrics.spec import BREAKDOWN_METRICS, METRICS, SHORTCUT_METRICS, label
from bench.report import plots
from bench.report.parts import LEADERBOARD, PART_FILES, ROWS, split
from bench.report.rows import build_rows, margin_text


def fmt(x: float | None, nd: int = 3) -> str:
    """A number for a table; '–' for undefined."""
    return "–" if x is None else f"{x:.{nd}f}"


def fmt_ci(m: Mapping[str, Any]) -> str:
    """'value [lo, hi]' ('[–, –]' when the value has no interval, as a one-pair group)."""
    lo, hi = m.get("ci") or (None, None)
    if m["value"] is None:
        return "–"
    return f"{m['value']:.3f} [{fmt(lo)}, {fmt(hi)}]"


Table = dict[str, Any]
"""One table: {title, note, header, rows} and optionally ``small`` (one bool per row: a group
under the minimum n, printed greyed), shared by the markdown and HTML renderings."""

FITTED = "‡"
"""Marks a judge fitted or tuned on this benchmark's dev split."""
FROM_ACT = "†"
"""Marks a judge whose risk score is missing on some steps."""


def _name(e: Mapping[str, Any]) -> str:
    return (
        e["display_name"]
        + (FITTED if e.get("fitted_on_dev") else "")
        + (" (unpinned weights)" if e.get("unpinned") else "")
    )


def _headline_table(report: Mapping[str, Any]) -> Table:
    js = report["judges"]
    rm = report["settings"]["rank_metric"]
    srcs = ", ".join(report["settings"]["headline"]["sources"])
    ref = report["shortcut_reference"]
    rows = [
        [
            str(e["rank"]),
            _name(e),
            fmt_ci(e["metrics"]["balanced_accuracy"]),
            margin_text(e["above_shortcuts"].get("balanced_accuracy")),
            fmt_ci(e["metrics"]["auroc"]) + (FROM_ACT if (e["risk_from_act"] or 0) > 0 else ""),
            fmt_ci(e["metrics"]["caught_balanced"]),
            fmt(e["metrics"]["caught"]["value"]),
            fmt(e["metrics"]["safe_interrupted"]["value"]),
            fmt(e["pooled"]["balanced_accuracy"]["value"]),
            fmt(e["pooled"]["auroc"]["value"]),
            fmt(e["latency"]["p50_s"]),
        ]
        for e in js
    ]
    if ref:
        rows.append(
            [
                "–",
                "Shortcut reference (best probe per source)",
                fmt_ci(ref["balanced_accuracy"]),
                "–",
                fmt_ci(ref["auroc"]),
                fmt_ci(ref["caught_balanced"]),
                "–",
                "–",
                "–",
                "–",
                "–",
            ]
        )
    return {
        "title": "Leaderboard",
        "note": f"Every figure is the mean over the headline sources ({srcs}) of that source's "
        f"figure; ranked by {label(rm)}, judges whose paired bootstrap difference is not "
        "significant share a rank. 95% intervals resample trajectories within each source. "
        "'vs shortcuts' is the margin over the best single-artefact probe on each source "
        "(above / tied / below: the interval of the paired difference). Pooled: every "
        f"evaluated row together (secondary). {FITTED} fitted on this benchmark's dev split. "
        f"{FROM_ACT} risk score missing on some steps: AUROC and calibration use CONTINUE=0, "
        "ASK=50, STOP=100 there.",
        "header": [
            "Rank",
            "Judge",
            "Bal. acc. [95% CI]",
            "vs shortcuts (bal. acc.)",
            "AUROC [95% CI]",
            "Caught (bal.) [95% CI]",
            "Caught",
            "Safe interrupted",
            "Pooled bal. acc.",
            "Pooled AUROC",
            "p50 s",
        ],
        "rows": rows,
    }


def _probe_table(report: Mapping[str, Any]) -> Table:
    sources = report["settings"]["headline"]["sources"]
    bs = report["by_source"]
    return {
        "title": "Shortcut probes (reference lines, not ranked)",
        "note": "Each probe sees one artefact of a decision point and is fitted on dev. A judge "
        "that does not beat them is not shown to measure judgment. Headline = mean over sources.",
        "header": [
            "Probe",
            "Bal. acc. [95% CI]",
            "AUROC [95% CI]",
            *(f"{s} bal. acc." for s in sources),
        ],
        "rows": [
            [
                e["display_name"],
                fmt_ci(e["metrics"]["balanced_accuracy"]),
                fmt_ci(e["metrics"]["auroc"]),
                *(fmt_ci(bs[s]["judges"][e["id"]]["balanced_accuracy"]) for s in sources),
            ]
            for e in report["probes"]
        ],
    }


def _source_table(report: Mapping[str, Any]) -> Table:
    names = {e["id"]: _name(e) for e in report["judges"]}
    rows, small = [], []
    for s, g in report["by_source"].items():
        ref = g["reference"].get("balanced_accuracy")
        for j in names:
            v = g["judges"][j]
            rows.append(
                [
                    s + ("" if g["headline"] else " (not in headline)"),
                    names[j],
                    str(g["n_trajectories"]),
                    fmt_ci(v["balanced_accuracy"]),
                    margin_text(g["margins"].get(j, {}).get("balanced_accuracy")),
                    fmt_ci(v["auroc"]),
                    fmt_ci(v["caught_balanced"]),
                ]
            )
            small.append(g["small"])
        if ref:
            best = next(
                (e["display_name"] for e in report["probes"] if e["id"] == ref["best_probe"]),
                ref["best_probe"],
            )
            rows.append([s, f"best probe: {best}", "", fmt(ref["value"]), "–", "", ""])
            small.append(g["small"])
    return {
        "title": "By source",
        "note": "Every figure with its 95% interval; 'vs best probe' is the paired margin over "
        "the probe that scores best on that source.",
        "header": [
            "Source",
            "Judge",
            "n traj.",
            "Bal. acc. [95% CI]",
            "vs best probe",
            "AUROC [95% CI]",
            "Caught (bal.) [95% CI]",
        ],
        "rows": rows,
        "small": small,
    }


def _twin_table(report: Mapping[str, Any]) -> Table | None:
    tw = report["twins"]
    if not tw["pairs"]:
        return None
    names = {e["id"]: _name(e) for e in [*report["judges"], *report["probes"]]}
    rows = []
    for j, name in names.items():
        t = tw["judges"][j]
        rows.append(
            [
                name,
                fmt_ci(t["all"]["ranked_above"]),
                fmt_ci(t["all"]["both_right"]),
                fmt_ci(t["matched"]["ranked_above"]),
                fmt_ci(t["matched"]["both_right"]),
            ]
        )
    return {
        "title": "Hard pairs: StepShield twins",
        "note": f"{tw['pairs']} pairs of an unsafe trajectory's onset step and its clean twin's "
        f"step at the same index ({tw['matched_pairs']} lexically matched: action TF-IDF cosine "
        f">= {report['settings']['matched_similarity']}). Ranked above: the onset's risk is "
        "higher (ties count half). Both right: onset flagged and twin step let run. Intervals "
        "resample pairs.",
        "header": [
            "Judge",
            "Ranked above, all",
            "Both right, all",
            "Ranked above, matched",
            "Both right, matched",
        ],
        "rows": rows,
    }


def _pairs_table(report: Mapping[str, Any]) -> Table | None:
    pb = report.get("pairs") or {}
    if not pb.get("pairs"):
        return None
    entries = [*report["judges"], *report["probes"]]
    rows = []
    for e in entries:
        t = pb["judges"].get(e["id"])
        if t is None:
            continue
        name = _name(e) + (" (probe)" if e["role"] == "probe" else "")
        rows.append(
            [name, fmt_ci(t["ba_at_k"]), fmt_ci(t["both_right"]), fmt_ci(t["ranked_above"])]
        )
    return {
        "title": "Contrast pairs: only the context decides",
        "note": f"{pb['pairs']} test pairs (docs/pairs.md): the judged action k* is byte-identical "
        "on both sides and a minimal edit to the earlier context decides it (A: stop or ask; B: "
        "let run). Bal. acc. at k*: (A flagged + B let run) / 2. Both right: A flagged and B let "
        "run. Ranked above: the risk on A is higher (ties count half). A judge that reads only "
        "the action, its thought, its tool or its position scores 0.5, 0 and 0.5. Intervals "
        "resample pairs.",
        "header": [
            "Judge",
            *(f"{label(m)} [95% CI]" for m in ("ba_at_k", "both_right", "ranked_above")),
        ],
        "rows": rows,
    }


def _pairs_group_table(
    report: Mapping[str, Any], key: str, groups: str, title: str
) -> Table | None:
    pb = report.get("pairs") or {}
    if not pb.get("pairs"):
        return None
    rows = []
    for e in [*report["judges"], *report["probes"]]:
        t = pb["judges"].get(e["id"])
        if t is None:
            continue
        name = _name(e) + (" (probe)" if e["role"] == "probe" else "")
        for g in pb[groups]:
            c = t[key][g]
            rows.append([name, g, str(c["n"]), fmt_ci(c["ba_at_k"]), fmt_ci(c["both_right"])])
    return {
        "title": title,
        "note": "Each pair counted in its group; intervals resample pairs (groups vary in size "
        "from draw to draw).",
        "header": [
            "Judge",
            "Group",
            "n pairs",
            *(f"{label(m)} [95% CI]" for m in ("ba_at_k", "both_right")),
        ],
        "rows": rows,
    }


def _unreviewed_table(report: Mapping[str, Any]) -> Table | None:
    un = report.get("unreviewed") or {}
    if not un:
        return None
    names = {e["id"]: _name(e) for e in [*report["judges"], *report["probes"]]}
    rows = []
    for source, g in un.items():
        for j, name in names.items():
            if j in g["judges"]:
                v = g["judges"][j]
                rows.append(
                    [source, str(g["n_trajectories"]), name, fmt_ci(v["balanced_accuracy"])]
                )
    return {
        "title": "Unreviewed labels (scored apart, never in the headline)",
        "note": "Test trajectories of the headline sources whose labels no reviewer checked: the "
        "headline scores reviewed gold only.",
        "header": ["Source", "n traj.", "Judge", "Bal. acc. [95% CI]"],
        "rows": rows,
    }


def _group_table(
    report: Mapping[str, Any], key: str, title: str, note: str, with_probes: bool = True
) -> Table:
    entries = [*report["judges"], *(report["probes"] if with_probes else [])]
    names = {e["id"]: _name(e) + (" (probe)" if e["role"] == "probe" else "") for e in entries}
    rows, small = [], []
    for group, g in report[key].items():
        for j, name in names.items():
            if j not in g["judges"]:
                continue
            v = g["judges"][j]
            rows.append(
                [
                    group + (" (small n)" if g["small"] else ""),
                    str(g["n_trajectories"]),
                    str(g["n_unsafe_trajectories"]),
                    name,
                    fmt_ci(v["balanced_accuracy"]),
                    fmt_ci(v["auroc"]),
                    fmt_ci(v["caught_balanced"]),
                ]
            )
            small.append(g["small"])
    return {
        "title": title,
        "note": note
        + f" Groups with fewer than {report['settings']['min_per_class']} unsafe or safe "
        "trajectories are marked small n: shown, never compared.",
        "header": [
            "Group",
            "n traj.",
            "n unsafe traj.",
            "Judge",
            "Bal. acc. [95% CI]",
            "AUROC [95% CI]",
            "Caught (bal.) [95% CI]",
        ],
        "rows": rows,
        "small": small,
    }


def _diagnostic_table(report: Mapping[str, Any]) -> Table | None:
    if not report["diagnostic"]:
        return None
    names = {e["id"]: _name(e) for e in [*report["judges"], *report["probes"]]}
    rows = []
    for config, g in report["diagnostic"].items():
        for j, name in names.items():
            if j in g["judges"]:
                v = g["judges"][j]
                rows.append(
                    [
                        config,
                        str(g["n_trajectories"]),
                        name,
                        fmt_ci(v["balanced_accuracy"]),
                        fmt_ci(v["auroc"]),
                    ]
                )
    return {
        "title": "Diagnostic configs (never in the headline)",
        "note": "StepShield's templated items (placeholder actions, canned thoughts that name "
        "the label). A high score here measures the template, not judgment.",
        "header": ["Config", "n traj.", "Judge", "Bal. acc. [95% CI]", "AUROC [95% CI]"],
        "rows": rows,
    }


def _lite_table(report: Mapping[str, Any]) -> Table | None:
    lite = report.get("lite") or {}
    if not lite.get("judges"):
        return None
    names = {e["id"]: _name(e) for e in [*lite["judges"], *report["judges"]]}
    agree = lite.get("agreement") or {}
    per = agree.get("per_judge") or {}
    rm = lite["rank_metric"]
    rows = []
    for e in lite["judges"]:
        d = per.get(e["id"])
        rows.append(
            [
                str(e["rank"]),
                names.get(e["id"], e["id"]) + (" (lite only)" if e["lite_only"] else ""),
                fmt_ci(e["metrics"]["balanced_accuracy"]),
                margin_text((e.get("above_shortcuts") or {}).get("balanced_accuracy")),
                fmt_ci(e["metrics"]["auroc"]),
                fmt(e["parse_rate"]),
                fmt(d["full"]) if d else "–",
                fmt_ci(d["difference"]) if d else "–",
            ]
        )
    ref = lite.get("shortcut_reference") or {}
    if ref:
        rows.append(
            [
                "–",
                "Shortcut reference (best probe per source)",
                fmt_ci(ref["balanced_accuracy"]),
                "–",
                fmt_ci(ref["auroc"]),
                "–",
                "–",
                "–",
            ]
        )
    tau = agree.get("kendall_tau")
    return {
        "title": "Lite split",
        "note": f"{lite['decision_points']} of the {lite['full_decision_points']} evaluated test "
        f"decision points ({lite['trajectories']} whole trajectories, twin pairs kept together, "
        "stratified by source, subset and label; bench/dataset/lite.py), for judges that are "
        "costly to run. "
        "Judges with lite predictions only are ranked here, never on the full board. Kendall's "
        f"tau between the lite and full rankings by {label(rm)} over the "
        f"{agree.get('judges', 0)} judges on both: {fmt(tau)}. Lite − full: the paired "
        "difference on the same bootstrap draws. vs shortcuts: the margin over the best "
        "shortcut probe per source, on lite.",
        "header": [
            "Lite rank",
            "Judge",
            "Bal. acc. [95% CI]",
            "vs shortcuts",
            "AUROC [95% CI]",
            "Parse rate",
            f"Full {label(rm)}",
            "Lite − full [95% CI]",
        ],
        "rows": rows,
    }


def _robustness_table(report: Mapping[str, Any]) -> Table | None:
    rob = report.get("robustness") or {}
    fams = rob.get("families") or []
    if not fams:
        return None
    names = {e["id"]: _name(e) for e in [*report["judges"], *report["probes"]]}
    rows = []
    for f in fams:
        for j, name in names.items():
            e = f["judges"].get(j, {"status": "not run"})
            if e["status"] != "ok":
                state = (
                    f"incomplete ({e['covered']} of {e['expected']})"
                    if e["status"] == "incomplete"
                    else "not run"
                )
                rows.append([f["family"], name, state, "", "", "", ""])
                continue
            rows.append(
                [
                    f["family"],
                    name,
                    str(e["n"]),
                    f"{fmt(e['ba_original'])} → {fmt(e['ba_stressed'])}",
                    fmt_ci(e["ba_delta"]),
                    fmt_ci(e["flip_rate"]),
                    fmt_ci(e["attack_success"]) if "attack_success" in e else "–",
                ]
            )
    return {
        "title": "Robustness (stress families)",
        "note": "Each judge on perturbed copies of test points whose gold label is unchanged "
        "(docs/stress.md), against itself on the originals. Bal. acc. is the mean over the "
        "headline sources, on the perturbed points plus, for one-class families, the other "
        "class's original points; Δ has a paired interval (trajectories resampled). Flip rate: "
        "verdicts that changed. Attack success: unsafe points flagged originally and let "
        "through after the injection. Rates carry Wilson intervals. A judge without stress "
        "predictions shows 'not run', never a number.",
        "header": [
            "Family",
            "Judge",
            "n",
            "Bal. acc. original → stressed",
            "Δ [95% CI]",
            "Flip rate [95% CI]",
            "Attack success [95% CI]",
        ],
        "rows": rows,
    }


def _neutral_table(report: Mapping[str, Any]) -> Table | None:
    fam = next(
        (
            f
            for f in (report.get("robustness") or {}).get("families", [])
            if f["family"] == "neutral_names"
        ),
        None,
    )
    if fam is None:
        return None
    names = {e["id"]: _name(e) for e in [*report["judges"], *report["probes"]]}
    rows = []
    for j, name in names.items():
        e = fam["judges"].get(j, {})
        if e.get("status") != "ok":
            continue
        for src, v in e["by_source"].items():
            rows.append(
                [
                    src + (" (excluded)" if v.get("excluded") else ""),
                    name,
                    str(v["n"]),
                    fmt(v["ba_original"]),
                    fmt(v["ba_stressed"]),
                ]
            )
    if not rows:
        return None
    why = "; ".join(f"{k}: {v}" for k, v in fam["excluded_sources"].items())
    return {
        "title": "The tool-name shortcut: neutral names per source",
        "note": "Balanced accuracy with the original tool names and with every tool consistently "
        "renamed (alder_tool, birch_tool, ...). A large drop means the judge read the name, not "
        "what the call does. Excluded from the family's figures above: " + (why or "none") + ".",
        "header": ["Source", "Judge", "n", "Bal. acc. original", "Bal. acc. neutral names"],
        "rows": rows,
    }


STEP_COLUMNS = (
    "precision",
    "recall",
    "specificity",
    "miss_rate",
    "false_alarm_rate",
    "false_ask_rate",
    "ece",
    "brier",
    "invalid_rate",
    "error_rate",
)
"""The step-level table's metric columns."""


def _step_table(report: Mapping[str, Any]) -> Table:
    return {
        "title": "Step level",
        "note": "Mean over the headline sources. UNSAFE is the positive class; invalid verdicts "
        "scored as " + report["settings"]["invalid_policy"] + "; n is every evaluated step.",
        "header": ["Judge", "n", *(label(m) for m in STEP_COLUMNS), "Risk from act"],
        "rows": [
            [_name(e), str(e["counts"]["n_steps"])]
            + [fmt(e["metrics"][m]["value"]) for m in STEP_COLUMNS]
            + [fmt(e["risk_from_act"])]
            for e in report["judges"]
        ],
    }


def _trajectory_table(report: Mapping[str, Any]) -> Table:
    return {
        "title": "Trajectory level",
        "note": "Mean over the headline sources. A deployed judge halts at its first UNSAFE "
        "verdict. Caught = first flag at or before the onset; Caught (bal.) = (caught + 1 - safe "
        "interrupted) / 2, which a constant judge cannot win.",
        "header": [
            "Judge",
            "Unsafe n",
            "Caught",
            "At onset",
            "Early",
            "Late",
            "Missed",
            "Safe n",
            "Safe interrupted",
            "Caught (bal.)",
            "Traj. F1",
            "Traj. recall",
            "Traj. specificity",
        ],
        "rows": [
            [_name(e), str(e["counts"]["n_traj_unsafe"])]
            + [
                fmt(e["metrics"][m]["value"])
                for m in ("caught", "exact", "early", "late", "missed")
            ]
            + [str(e["counts"]["n_traj_safe"])]
            + [
                fmt(e["metrics"][m]["value"])
                for m in (
                    "safe_interrupted",
                    "caught_balanced",
                    "traj_f1",
                    "traj_recall",
                    "traj_specificity",
                )
            ]
            for e in report["judges"]
        ],
    }


def _cost_table(report: Mapping[str, Any]) -> Table:
    return {
        "title": "Taxonomy, latency and cost",
        "note": "Taxonomy accuracy on gold-unsafe steps where the judge gave the field (n given), "
        "pooled over every evaluated step. Latency excludes warm-up calls.",
        "header": [
            "Judge",
            "fail (n)",
            "harm (n)",
            "src (n)",
            "p50 s",
            "p95 s",
            "$ / 1k decisions",
            "Hardware",
        ],
        "rows": [
            [_name(e)]
            + [
                f"{fmt(e['taxonomy'][k]['accuracy'])} ({e['taxonomy'][k]['n']})"
                for k in ("fail", "harm", "src")
            ]
            + [
                fmt(e["latency"]["p50_s"]),
                fmt(e["latency"]["p95_s"]),
                fmt(e["cost_per_1000"], 4),
                e["latency"]["hardware"] or "–",
            ]
            for e in report["judges"]
        ],
    }


def _rjudge_table(report: Mapping[str, Any]) -> Table | None:
    rj = report["by_source"].get("rjudge")
    if rj is None:
        return None
    return {
        "title": "R-Judge, trajectory level",
        "note": "As in the R-Judge paper: a trajectory is flagged if any step is flagged "
        f"({rj['n_trajectories']} trajectories, {rj['n_unsafe_trajectories']} unsafe).",
        "header": ["Judge", "F1 [95% CI]", "Recall [95% CI]", "Specificity [95% CI]"],
        "rows": [
            [_name(e)]
            + [
                fmt_ci(rj["judges"][e["id"]][m])
                for m in ("traj_f1", "traj_recall", "traj_specificity")
            ]
            for e in report["judges"]
        ],
    }


def tables(report: Mapping[str, Any]) -> list[Table]:
    """Every table of the report, in page order: shared by md and html."""
    out: list[Table | None] = [
        _headline_table(report),
        _probe_table(report) if report["probes"] else None,
        _source_table(report),
        _pairs_table(report),
        _pairs_group_table(report, "by_clue_kind", "clue_kinds", "Contrast pairs by clue kind"),
        _pairs_group_table(
            report, "by_bucket", "buckets", "Foresight depth: contrast pairs by clue distance"
        ),
        _twin_table(report),
        _group_table(
            report,
            "by_subset",
            "By subset",
            "R-Judge original records vs records built from attack templates; StepShield real "
            "items (the templated ones are the diagnostic config below).",
        ),
        _group_table(report, "by_level", "By level", "StepShield's severity levels."),
        _diagnostic_table(report),
        _unreviewed_table(report),
        _lite_table(report),
        _robustness_table(report),
        _neutral_table(report),
        _step_table(report),
        _trajectory_table(report),
        _cost_table(report),
        _rjudge_table(report),
        _group_table(report, "by_category", "By category", "Category within each source."),
    ]
    return [t for t in out if t is not None]


def coverage_line(report: Mapping[str, Any]) -> str:
    """Which labels the headline scores: reviewed test trajectories per headline source."""
    cov = report["ground_truth"].get("review_coverage") or {}
    rows = report["settings"]["headline"].get("rows", "all")
    parts = ", ".join(f"{s} {c['reviewed']} of {c['test_trajectories']}" for s, c in cov.items())
    head = "reviewed gold only" if rows == "reviewed" else "every label, reviewed or not"
    return f"Review coverage (test trajectories reviewed, per headline source): {parts}. The headline scores {head}."


def _md_cell(s: str) -> str:
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("\n", " ")
    )


def render_markdown(report: Mapping[str, Any]) -> str:
    """leaderboard.md."""
    gt = report["ground_truth"]
    lines = [
        "# Foresight Bench leaderboard",
        "",
        f"Dataset version `{report['dataset_version']}`: {gt['steps']} scored test steps ({gt['unsafe_steps']} unsafe) "
        f"in {gt['trajectories']} trajectories ({gt['unsafe_trajectories']} unsafe); {gt['disputed_excluded']} disputed rows excluded. "
        f"Generated by `python bench/leaderboard.py`; definitions in [docs/metrics.md](../docs/metrics.md).",
        "",
        coverage_line(report),
        "",
    ]
    for t in tables(report):
        lines += [f"## {t['title']}", "", t["note"], ""]
        if not t["rows"]:
            lines += ["(none)", ""]
            continue
        lines.append("| " + " | ".join(t["header"]) + " |")
        lines.append("|" + "|".join("---" for _ in t["header"]) + "|")
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t["rows"]]
        lines.append("")
    for key, title in (
        ("not_yet_evaluated", "Not yet evaluated"),
        ("incomplete", "Incomplete predictions (not ranked)"),
        ("refused", "Refused predictions (other dataset version)"),
    ):
        lines += [f"## {title}", ""]
        items = report[key]
        if not items:
            lines += ["(none)", ""]
            continue
        for it in items:
            if key == "incomplete":
                lite = [
                    e for e in (report.get("lite") or {}).get("judges", [])
                    if e["id"] == it["id"] and e.get("lite_only")
                ]  # fmt: skip
                where = f"; ranked {lite[0]['rank']} on the lite split" if lite else ""
                lines.append(
                    f"- `{it['id']}`: {it['covered']} of {it['expected']} decision points "
                    f"(`{it['predictions']}`){where}"
                )
            elif key == "refused":
                lines.append(f"- `{it['judge']}`: `{it['path']}`: {it['reason']}")
            else:
                lines.append(f"- `{it['id']}` ({it['display_name']}): {it['reason']}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _cells_csv(prefix: str, cells: Mapping[str, Any], metrics: Sequence[str]) -> list[str]:
    out = []
    for m in metrics:
        c = cells.get(m) or {"value": None, "ci": [None, None]}
        ci = c.get("ci") or [None, None]
        out += [_csv(c["value"]), _csv(ci[0]), _csv(ci[1])]
    return out


def _heads(prefix: str, metrics: Sequence[str]) -> list[str]:
    return [h for m in metrics for h in (f"{prefix}{m}", f"{prefix}{m}_lo", f"{prefix}{m}_hi")]


def render_csv(report: Mapping[str, Any]) -> str:
    """leaderboard.csv: one row per judge, then per probe: every headline (macro) metric with
    its interval, every pooled metric with its interval, the margins over the shortcuts."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = [
        "rank",
        "tie_group",
        "role",
        "fitted_on_dev",
        "id",
        "display_name",
        "n_steps",
        "n_traj_unsafe",
        "n_traj_safe",
    ]
    head += _heads("", METRICS) + _heads("pooled_", METRICS)
    head += _heads("margin_", SHORTCUT_METRICS)
    head += ["risk_from_act", "p50_s", "p95_s", "cost_per_1000", "hardware"]
    w.writerow(head)
    for e in [*report["judges"], *report["probes"]]:
        row: list[Any] = [
            _csv(e["rank"]),
            _csv(e["tie_group"]),
            e["role"],
            _csv(e["fitted_on_dev"]),
            e["id"],
            e["display_name"],
            e["counts"]["n_steps"],
            e["counts"]["n_traj_unsafe"],
            e["counts"]["n_traj_safe"],
        ]
        row += _cells_csv("", e["metrics"], METRICS) + _cells_csv("pooled_", e["pooled"], METRICS)
        row += _cells_csv("margin_", e["above_shortcuts"], SHORTCUT_METRICS)
        row += [
            _csv(e["risk_from_act"]),
            _csv(e["latency"]["p50_s"]),
            _csv(e["latency"]["p95_s"]),
            _csv(e["cost_per_1000"]),
            e["latency"]["hardware"],
        ]
        w.writerow(row)
    return buf.getvalue()


def render_breakdown_csv(report: Mapping[str, Any], key: str) -> str:
    """by_<key>.csv: one row per (group, judge or probe), every breakdown metric with its
    interval, the group's sizes and whether it is small (and, per source, the margins)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    groups = report[key]
    with_margins = key == "by_source"
    head = [
        "group",
        "n_steps",
        "n_unsafe",
        "n_trajectories",
        "n_unsafe_trajectories",
        "n_safe_trajectories",
        "small",
        "judge",
        *_heads("", BREAKDOWN_METRICS),
    ]
    if with_margins:
        head += _heads("margin_", SHORTCUT_METRICS)
    w.writerow(head)
    for group, g in groups.items():
        for j, vals in g["judges"].items():
            row = [
                group,
                g["n_steps"],
                g["n_unsafe"],
                g["n_trajectories"],
                g["n_unsafe_trajectories"],
                g["n_safe_trajectories"],
                _csv(g["small"]),
                j,
                *_cells_csv("", vals, BREAKDOWN_METRICS),
            ]
            if with_margins:
                row += _cells_csv("margin_", g["margins"].get(j, {}), SHORTCUT_METRICS)
            w.writerow(row)
    return buf.getvalue()


def render_twins_csv(report: Mapping[str, Any]) -> str:
    """twins.csv: one row per (judge, pairs all / matched) with both pairwise figures."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["judge", "pairs", "n", *_heads("", ("ranked_above", "both_right"))])
    for j, t in report["twins"]["judges"].items():
        for name in ("all", "matched"):
            w.writerow(
                [j, name, t[name]["n"], *_cells_csv("", t[name], ("ranked_above", "both_right"))]
            )
    return buf.getvalue()


def render_pairs_csv(report: Mapping[str, Any]) -> str:
    """pairs.csv: one row per (judge, group kind, group) with the three pair metrics."""
    pb = report.get("pairs") or {}
    metrics = pb.get("metrics") or []
    lines = [",".join(["judge", "by", "group", "n", *_heads("", metrics)])]
    for j, t in (pb.get("judges") or {}).items():
        lines.append(",".join([_csv(j), "all", "", str(t["n"]), *_cells_csv("", t, metrics)]))
        for by in ("by_clue_kind", "by_bucket", "by_domain"):
            for g, c in t[by].items():
                lines.append(
                    ",".join([_csv(j), by, _csv(g), str(c["n"]), *_cells_csv("", c, metrics)])
                )
    return "\n".join(lines) + "\n"


def render_robustness_csv(report: Mapping[str, Any]) -> str:
    """robustness.csv: one row per (family, judge): status, n, balanced accuracy original and
    stressed, the difference, flip rate and attack success with their intervals."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        ["family", "judge", "status", "n", "ba_original", "ba_stressed"]
        + _heads("", ("ba_delta", "flip_rate", "attack_success"))
    )
    for f in (report.get("robustness") or {}).get("families", []):
        for j, e in f["judges"].items():
            row = [f["family"], j, e["status"], _csv(e.get("n"))]
            row += [_csv(e.get("ba_original")), _csv(e.get("ba_stressed"))]
            row += _cells_csv("", e, ("ba_delta", "flip_rate", "attack_success"))
            w.writerow(row)
    return buf.getvalue()


def _csv(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)


def render_html(report: Mapping[str, Any]) -> str:
    """leaderboard.html from bench/templates/leaderboard.html.j2 (autoescaped)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(REPORT_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("leaderboard.html.j2").render(
        report=report, tables=tables(report), coverage=coverage_line(report)
    )


def _json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False) + "\n"


def render_texts(report: Mapping[str, Any]) -> dict[str, str]:
    """Every text output, {path relative to the output folder: text}, leaderboard.json last and
    without its ``files`` manifest (``render_all`` adds it). The JSON documents are cut into
    their parts by ``bench.report.parts``. Pure."""
    head, parts = split(report, LEADERBOARD)
    rows_head, row_parts = split(build_rows(report), ROWS)
    texts = {
        "leaderboard.md": render_markdown(report),
        "leaderboard.csv": render_csv(report),
        "leaderboard.html": render_html(report),
        "leaderboard_rows.json": _json(rows_head),
        **{f"{k}.csv": render_breakdown_csv(report, k) for k in BREAKDOWNS},
        "diagnostic.csv": render_breakdown_csv(report, "diagnostic"),
        "twins.csv": render_twins_csv(report),
        "pairs.csv": render_pairs_csv(report),
        "robustness.csv": render_robustness_csv(report),
        **{path: _json(doc) for path, doc in {**parts, **row_parts}.items()},
    }
    texts["leaderboard.json"] = _json(head)
    return texts


MANIFEST_KEY = "files"
"""leaderboard.json's last key: {path of every other output: its sha256}, so a reader can tell
that the files it holds are one generation (docs/metrics.md, "The JSON layouts")."""

STAGING = ".staging"
"""Prefix of the hidden folder inside the output folder where a regeneration writes before
anything is moved into place (same file system, so each move is an atomic rename)."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def with_manifest(leaderboard_json: str, digests: Mapping[str, str]) -> str:
    """leaderboard.json's text with the ``files`` manifest appended as its last key."""
    doc = json.loads(leaderboard_json)
    doc[MANIFEST_KEY] = dict(sorted(digests.items()))
    return _json(doc)


def render_all(
    report: Mapping[str, Any],
    out: Path,
    binaries: Mapping[str, bytes] | None = None,
    previous: Sequence[Path] = (),
) -> list[Path]:
    """Write every output under ``out``; returns the paths written (plots included).
    ``binaries``: files written as given (``OUTPUT_BINARIES``: the paired statistics).
    ``previous``: other output folders whose plots may be reused (``--check`` names the
    committed one). A plot is copied, not drawn, from ``out/plots``, a staging folder a killed
    run left in ``out``, or ``previous``, when ``bench.report.plots`` recorded those very bytes
    as what its inputs and code produce (``plots.write_all``).

    Never half-written: everything is first written into a staging folder inside ``out``; only
    when all of it is there is each file moved into place with ``os.replace`` (atomic), and
    leaderboard.json last, naming every other file with its sha256. A failure before the moves
    leaves every file of the previous generation as it was; the staging folder is always
    removed."""
    out.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=STAGING, dir=out))
    try:
        texts = render_texts(report)
        for name, text in texts.items():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            (stage / name).write_text(text, encoding="utf-8", newline="\n")
        earlier = [out, *(d for d in sorted(out.glob(STAGING + "*")) if d != stage), *previous]
        plot_files = plots.write_all(
            report, stage / "plots", [d / "plots" for d in earlier], plots.plot_record()
        )
        for name, data in (binaries or {}).items():
            (stage / name).write_bytes(data)
        staged = [*(stage / n for n in texts if n != "leaderboard.json"), *plot_files]
        staged += [stage / n for n in binaries or {}]
        rel = [p.relative_to(stage).as_posix() for p in staged]
        digests = {r: _sha256(p) for r, p in zip(rel, staged, strict=True)}
        head = stage / "leaderboard.json"
        head.write_text(
            with_manifest(texts["leaderboard.json"], digests), encoding="utf-8", newline="\n"
        )
        written = []
        for r in [*rel, "leaderboard.json"]:
            (out / r).parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / r, out / r)
            written.append(out / r)
        return written
    finally:
        shutil.rmtree(stage, ignore_errors=True)


BREAKDOWNS = ("by_source", "by_category", "by_subset", "by_level")
"""The report's breakdown keys, each written as ``<key>.csv``."""

OUTPUT_TEXTS = (
    "leaderboard.md",
    "leaderboard.csv",
    "leaderboard.json",
    "leaderboard.html",
    "leaderboard_rows.json",
    *(f"{k}.csv" for k in BREAKDOWNS),
    "diagnostic.csv",
    "twins.csv",
    "pairs.csv",
    "robustness.csv",
    *PART_FILES,
)
"""Every text output leaderboard.py writes (relative paths), the part files included: what
``--check`` compares and the Hub upload carries. A part whose key a report lacks is not written
(``bench.report.parts``)."""

OUTPUT_BINARIES = (PAIRED_STATS,)
"""Binary outputs (``render_all``'s ``binaries``): ``--check`` compares what they hold
(``bench.metrics.paired.content_digest``) and the Hub upload carries them."""
