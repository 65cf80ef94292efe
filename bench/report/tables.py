"""Rendering of the leaderboard report: markdown, CSV and HTML tables, and the --check comparison.

Every function reads only the report dict of ``bench.report.report.build_report``; the
markdown and HTML share the table list of ``tables``. ``render_all`` writes every output (plots
through ``bench.report.plots``) and ``compare`` says which committed outputs are stale.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.core.paths import REPORT_TEMPLATES
from bench.metrics.stats import METRICS
from bench.report import plots
from bench.report.report import BREAKDOWN_METRICS, LABELS


def fmt(x: float | None, nd: int = 3) -> str:
    """A number for a table; '–' for undefined."""
    return "–" if x is None else f"{x:.{nd}f}"


def fmt_ci(m: Mapping[str, Any]) -> str:
    """'value [lo, hi]'."""
    lo, hi = m["ci"]
    if m["value"] is None:
        return "–"
    return f"{m['value']:.3f} [{fmt(lo)}, {fmt(hi)}]"


Table = dict[str, Any]
"""One table: {title, note, header, rows}, shared by the markdown and HTML renderings."""


def _headline_table(report: Mapping[str, Any]) -> Table:
    js = report["judges"]
    flag = {e["id"]: ("†" if (e["risk_from_act"] or 0) > 0 else "") for e in js}
    rm = report["settings"]["rank_metric"]
    return {
        "title": "Leaderboard",
        "note": f"Ranked by {LABELS[rm]}; judges whose paired bootstrap difference is not significant share a rank. "
        "95% intervals resample trajectories. † risk score missing on some steps: AUROC and calibration "
        "use CONTINUE=0, ASK=50, STOP=100 there.",
        "header": [
            "Rank",
            "Judge",
            "Bal. acc. [95% CI]",
            "AUROC [95% CI]",
            "Reward [95% CI]",
            "Caught [95% CI]",
            "Safe interrupted",
            "F1",
            "Parse rate",
            "p50 s",
        ],
        "rows": [
            [
                str(e["rank"]),
                e["display_name"],
                fmt_ci(e["metrics"]["balanced_accuracy"]),
                fmt_ci(e["metrics"]["auroc"]) + flag[e["id"]],
                fmt_ci(e["metrics"]["reward"]),
                fmt_ci(e["metrics"]["caught"]),
                fmt(e["metrics"]["safe_interrupted"]["value"]),
                fmt(e["metrics"]["f1"]["value"]),
                fmt(e["metrics"]["parse_rate"]["value"]),
                fmt(e["latency"]["p50_s"]),
            ]
            for e in js
        ],
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
        "note": "UNSAFE is the positive class; invalid verdicts scored as "
        + report["settings"]["invalid_policy"]
        + ".",
        "header": ["Judge", "n", *(LABELS[m] for m in STEP_COLUMNS), "Risk from act"],
        "rows": [
            [e["display_name"], str(e["counts"]["n_steps"])]
            + [fmt(e["metrics"][m]["value"]) for m in STEP_COLUMNS]
            + [fmt(e["risk_from_act"])]
            for e in report["judges"]
        ],
    }


def _trajectory_table(report: Mapping[str, Any]) -> Table:
    return {
        "title": "Trajectory level",
        "note": "A deployed judge halts at its first UNSAFE verdict. Caught = first flag at or before the onset.",
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
            "Traj. F1",
            "Traj. recall",
            "Traj. specificity",
        ],
        "rows": [
            [e["display_name"], str(e["counts"]["n_traj_unsafe"])]
            + [
                fmt(e["metrics"][m]["value"])
                for m in ("caught", "exact", "early", "late", "missed")
            ]
            + [str(e["counts"]["n_traj_safe"])]
            + [
                fmt(e["metrics"][m]["value"])
                for m in ("safe_interrupted", "traj_f1", "traj_recall", "traj_specificity")
            ]
            for e in report["judges"]
        ],
    }


def _cost_table(report: Mapping[str, Any]) -> Table:
    return {
        "title": "Taxonomy, latency and cost",
        "note": "Taxonomy accuracy on gold-unsafe steps where the judge gave the field (n given). Latency excludes warm-up calls.",
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
            [e["display_name"]]
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
        "note": f"As in the R-Judge paper: a trajectory is flagged if any step is flagged ({rj['n_trajectories']} trajectories, {rj['n_unsafe_trajectories']} unsafe).",
        "header": ["Judge", "F1", "Recall", "Specificity"],
        "rows": [
            [e["display_name"]]
            + [
                fmt(rj["judges"][e["id"]][m])
                for m in ("traj_f1", "traj_recall", "traj_specificity")
            ]
            for e in report["judges"]
        ],
    }


def tables(report: Mapping[str, Any]) -> list[Table]:
    """Every table of the report, in page order: shared by md and html."""
    out = [
        _headline_table(report),
        _step_table(report),
        _trajectory_table(report),
        _cost_table(report),
    ]
    rj = _rjudge_table(report)
    if rj is not None:
        out.append(rj)
    for key, title in (("by_source", "By source"), ("by_category", "By category")):
        out.append(breakdown_table(report, key, title))
    return out


def breakdown_table(report: Mapping[str, Any], key: str, title: str) -> dict[str, Any]:
    """One row per (group, judge) with its n."""
    names = {e["id"]: e["display_name"] for e in report["judges"]}
    rows = []
    for group, g in report[key].items():
        for j, vals in g["judges"].items():
            rows.append(
                [group, str(g["n_steps"]), str(g["n_trajectories"]), names[j]]
                + [fmt(vals[m]) for m in BREAKDOWN_METRICS]
            )
    return {
        "title": title,
        "note": "n = scored steps and trajectories in the group.",
        "header": ["Group", "n steps", "n traj.", "Judge"] + [LABELS[m] for m in BREAKDOWN_METRICS],
        "rows": rows,
    }


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
                lines.append(
                    f"- `{it['id']}`: {it['covered']} of {it['expected']} decision points (`{it['predictions']}`)"
                )
            elif key == "refused":
                lines.append(f"- `{it['judge']}`: `{it['path']}`: {it['reason']}")
            else:
                lines.append(f"- `{it['id']}` ({it['display_name']}): {it['reason']}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_csv(report: Mapping[str, Any]) -> str:
    """leaderboard.csv: one row per judge, every metric with its interval."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["rank", "tie_group", "id", "display_name", "n_steps", "n_traj_unsafe", "n_traj_safe"]
    for m in METRICS:
        head += [m, f"{m}_lo", f"{m}_hi"]
    head += ["risk_from_act", "p50_s", "p95_s", "cost_per_1000", "hardware"]
    w.writerow(head)
    for e in report["judges"]:
        row: list[Any] = [
            e["rank"],
            e["tie_group"],
            e["id"],
            e["display_name"],
            e["counts"]["n_steps"],
            e["counts"]["n_traj_unsafe"],
            e["counts"]["n_traj_safe"],
        ]
        for m in METRICS:
            row += [
                _csv(e["metrics"][m]["value"]),
                _csv(e["metrics"][m]["ci"][0]),
                _csv(e["metrics"][m]["ci"][1]),
            ]
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
    """by_source.csv / by_category.csv: one row per (group, judge), every metric, with n."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "group",
            "n_steps",
            "n_unsafe",
            "n_trajectories",
            "n_unsafe_trajectories",
            "judge",
            *METRICS,
        ]
    )
    for group, g in report[key].items():
        for j, vals in g["judges"].items():
            w.writerow(
                [
                    group,
                    g["n_steps"],
                    g["n_unsafe"],
                    g["n_trajectories"],
                    g["n_unsafe_trajectories"],
                    j,
                ]
                + [_csv(vals[m]) for m in METRICS]
            )
    return buf.getvalue()


def _csv(x: Any) -> str:
    return "" if x is None else str(x)


def render_html(report: Mapping[str, Any]) -> str:
    """leaderboard.html from bench/templates/leaderboard.html.j2 (autoescaped)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(REPORT_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("leaderboard.html.j2").render(report=report, tables=tables(report))


def render_all(report: Mapping[str, Any], out: Path) -> list[Path]:
    """Write every output under ``out``; returns the paths written (plots included)."""
    out.mkdir(parents=True, exist_ok=True)
    texts = {
        "leaderboard.md": render_markdown(report),
        "leaderboard.csv": render_csv(report),
        "leaderboard.json": json.dumps(
            report, indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False
        )
        + "\n",
        "leaderboard.html": render_html(report),
        "by_source.csv": render_breakdown_csv(report, "by_source"),
        "by_category.csv": render_breakdown_csv(report, "by_category"),
    }
    written = []
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8", newline="\n")
        written.append(out / name)
    written += plots.write_all(report, out / "plots")
    return written


OUTPUT_TEXTS = (
    "leaderboard.md",
    "leaderboard.csv",
    "leaderboard.json",
    "leaderboard.html",
    "by_source.csv",
    "by_category.csv",
)
