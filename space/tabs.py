"""The tables each tab shows, shaped from what ``data.py`` read: the leaderboard (all data or one
source or category) with the judges not on it, trajectory outcomes, two judges compared with
their paired differences and disagreements, and Browse's id list and verdict table. Pure
functions over ``Results``/``Texts``; every number is copied from leaderboard.json or a
predictions file, none computed. HTML for Browse is in ``views.py``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import pandas as pd

from data import ALL, Results, SpaceDataError, Texts
from fmt import DASH, fmt, fmt_ci, fmt_risk, md_escape, open_label

log = logging.getLogger(__name__)

HEADLINE = ("balanced_accuracy", "auroc", "reward", "caught")
"""Metrics shown with their intervals in the main table (after the ranking metric)."""
PLAIN = ("safe_interrupted", "parse_rate", "f1")
"""Metrics shown as point values in the main table."""
OpenWeights = Literal["Any", "Open", "Closed", "Unstated"]
OPEN_CHOICES: tuple[OpenWeights, ...] = ("Any", "Open", "Closed", "Unstated")
ACT_CHOICES = ("Any", "CONTINUE", "ASK", "STOP")
BROWSE_LIMIT = 2000
"""Most decision points offered in Browse's dropdown at once (filters narrow the list)."""
DISAGREE_LIMIT = 500
"""Most disagreeing decision points listed in Compare."""
_RISK_FROM_ACT = ("auroc", "ece", "brier")
"""Metrics marked † when a judge's risk score was derived from its act on some steps."""


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """The rows as a DataFrame; with none, an empty one that still has the table's headers."""
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(columns))


# --------------------------------------------------------------------------- leaderboard tab


def metric_choices(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, name) for the ranking-metric dropdown, in table order."""
    return [(str(m["label"]), str(m["name"])) for m in report["metrics"]]


def sources(report: Mapping[str, Any]) -> list[str]:
    """Source names with a per-source breakdown."""
    return sorted(report.get("by_source", {}))


def categories(report: Mapping[str, Any]) -> list[str]:
    """Category names with a per-category breakdown."""
    return sorted(report.get("by_category", {}))


def backends(report: Mapping[str, Any]) -> list[str]:
    """Backend names of the ranked judges ('' shown as 'unknown')."""
    return sorted({e.get("backend") or "unknown" for e in report["judges"]})


def search_terms(search: str | None) -> list[str]:
    """Comma-separated search terms, lower-cased (any term may match)."""
    return [t.strip().lower() for t in (search or "").split(",") if t.strip()]


_OPEN_WANT: Mapping[str, bool | None] = {"Open": True, "Closed": False, "Unstated": None}
"""The open_weights value each open-weights choice keeps ('Any' keeps all)."""


def filter_judges(
    report: Mapping[str, Any],
    *,
    search: str | None = None,
    backend: Sequence[str] | None = None,
    open_weights: str = "Any",
) -> list[Mapping[str, Any]]:
    """Ranked judges matching the search (id or name), backends (empty: all) and open weights."""
    terms = search_terms(search)
    want = set(backend or ())
    out = []
    for e in report["judges"]:
        hay = f"{e['id']} {e.get('display_name', '')}".lower()
        if terms and not any(t in hay for t in terms):
            continue
        if want and (e.get("backend") or "unknown") not in want:
            continue
        if open_weights in _OPEN_WANT and e.get("open_weights") is not _OPEN_WANT[open_weights]:
            continue
        out.append(e)
    return out


def _judge_cells(e: Mapping[str, Any], rank_col: str, metric: str) -> dict[str, Any]:
    """The columns every leaderboard row starts with."""
    return {
        rank_col: e["ranks"][metric]["rank"],
        "Judge": e["display_name"],
        "Backend": e.get("backend") or "unknown",
        "Open": open_label(e.get("open_weights")),
    }


def _overall_rows(
    res: Results, judges: list[Mapping[str, Any]], metric: str, cols: list[str], plain: list[str]
) -> list[dict[str, Any]]:
    """Rows on all data: tie-group rank, each headline metric with its interval, plain values."""
    sign = 1 if res.higher_is_better(metric) else -1
    judges = sorted(
        judges,
        key=lambda e: (
            e["ranks"][metric]["rank"],
            e["metrics"][metric]["value"] is None,
            -sign * (e["metrics"][metric]["value"] or 0.0),
            e["id"],
        ),
    )
    rows = []
    for e in judges:
        row = _judge_cells(e, "Rank", metric)
        dagger = "†" if (e.get("risk_from_act") or 0) > 0 else ""
        for m in cols:
            row[f"{res.label(m)} [95% CI]"] = fmt_ci(e["metrics"][m]) + (
                dagger if m in _RISK_FROM_ACT else ""
            )
        for m in plain:
            row[res.label(m)] = fmt(e["metrics"][m]["value"])
        row["p50 s"] = fmt(e["latency"]["p50_s"])
        rows.append(row)
    return rows


def _group_rows(
    res: Results,
    judges: list[Mapping[str, Any]],
    metric: str,
    cols: list[str],
    group: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Rows for one source or category: its point estimates, sorted by ``metric``."""
    sign = 1 if res.higher_is_better(metric) else -1
    vals = {e["id"]: group["judges"].get(e["id"], {}) for e in judges}
    judges = sorted(
        judges,
        key=lambda e: (
            vals[e["id"]].get(metric) is None,
            -sign * (vals[e["id"]].get(metric) or 0.0),
            e["id"],
        ),
    )
    rows = []
    for e in judges:
        row = _judge_cells(e, "Rank (all data)", metric)
        for m in cols:
            row[res.label(m)] = fmt(vals[e["id"]].get(m))
        rows.append(row)
    return rows


def leaderboard_table(
    res: Results,
    *,
    metric: str = "balanced_accuracy",
    search: str | None = None,
    source: str | None = ALL,
    category: str | None = ALL,
    backend: Sequence[str] | None = None,
    open_weights: str = "Any",
) -> tuple[pd.DataFrame, str]:
    """The main table and a note on what it shows. On all data: ranks and tie groups for
    ``metric`` from the JSON, every headline metric with its 95% interval. With a source or
    category chosen: that group's point estimates (the JSON holds no intervals or ranks per
    group), sorted by ``metric``, next to each judge's overall rank."""
    rep = res.report
    if metric not in {m["name"] for m in rep["metrics"]}:
        raise SpaceDataError(f"unknown metric {metric!r}")
    source = source if source and source != ALL else None
    category = category if category and category != ALL else None
    notes = []
    if source and category:
        notes.append(
            "The JSON holds per-source and per-category breakdowns separately, not their "
            f"intersection: showing source **{md_escape(source)}** only."
        )
        category = None
    judges = filter_judges(rep, search=search, backend=backend, open_weights=open_weights)
    label = res.label(metric)
    # a fixed number of columns whatever the metric, so the widths set in app.py always fit
    cols_metrics = ([metric] + [m for m in HEADLINE if m != metric])[: len(HEADLINE)]
    plain = [m for m in PLAIN if m not in cols_metrics][: len(PLAIN) - 1]
    if not (source or category):
        rows = _overall_rows(res, judges, metric, cols_metrics, plain)
        notes.insert(
            0,
            f"Ranked by **{md_escape(label)}** on all {rep['ground_truth']['steps']} scored test "
            f"steps ({rep['ground_truth']['trajectories']} trajectories). Judges whose paired "
            "bootstrap difference is not significant share a rank; intervals resample "
            "trajectories. † risk score derived from the act on some steps.",
        )
    else:
        group_key, group = ("by_source", source) if source else ("by_category", category)
        g = rep[group_key].get(group)
        if g is None:
            raise SpaceDataError(f"no {group_key[3:]} called {group!r} in this leaderboard")
        rows = _group_rows(res, judges, metric, cols_metrics + plain, g)
        kind = "source" if group_key == "by_source" else "category"
        notes.insert(
            0,
            f"{kind.capitalize()} **{md_escape(str(group))}**: {g['n_steps']} scored steps "
            f"({g['n_unsafe']} unsafe) in {g['n_trajectories']} trajectories. Point estimates "
            f"sorted by **{md_escape(label)}**; intervals and tie groups are computed on all "
            "data only, so the rank shown is the overall one.",
        )
    if not rows:
        notes.append("No judge matches these filters.")
    return _frame(rows, ["Rank", "Judge", "Backend", "Open"]), "\n\n".join(notes)


def _listing(
    title: str,
    items: Iterable[Mapping[str, Any]],
    line: Callable[[Mapping[str, Any]], str],
    *,
    always: bool = False,
) -> list[str]:
    """A '### title (n)' section with one bullet per item; nothing when empty unless ``always``."""
    items = list(items)
    if not items and not always:
        return []
    return [f"### {title} ({len(items)})", *([f"- {line(x)}" for x in items] or ["(none)"])]


def pending_markdown(report: Mapping[str, Any]) -> str:
    """Judges not on the table: not yet evaluated, incomplete, refused, superseded."""

    def by_reason(key: str) -> Callable[[Mapping[str, Any]], str]:
        return lambda x: f"`{md_escape(x[key])}`: {md_escape(x['reason'])}"

    parts = _listing(
        "Not yet evaluated",
        report.get("not_yet_evaluated", []),
        lambda x: (
            f"`{md_escape(x['id'])}` {md_escape(x['display_name'])}: {md_escape(x['reason'])}"
        ),
        always=True,
    )
    parts += _listing(
        "Incomplete predictions, not ranked",
        report.get("incomplete", []),
        lambda x: f"`{md_escape(x['id'])}`: {x['covered']} of {x['expected']} decision points",
    )
    parts += _listing(
        "Refused: made for another dataset version",
        report.get("refused", []),
        by_reason("judge"),
    )
    parts += _listing("Superseded configurations", report.get("superseded", []), by_reason("judge"))
    return "\n".join(parts)


# --------------------------------------------------------------------------- trajectories tab


def trajectory_table(res: Results, search: str | None = None) -> pd.DataFrame:
    """Caught / at onset / early / late / missed and safe interrupted, per ranked judge."""
    rows = []
    for e in filter_judges(res.report, search=search):
        m, c = e["metrics"], e["counts"]
        rows.append(
            {
                "Rank": e["rank"],
                "Judge": e["display_name"],
                "Unsafe traj.": c["n_traj_unsafe"],
                "Caught [95% CI]": fmt_ci(m["caught"]),
                "At onset": fmt(m["exact"]["value"]),
                "Early": fmt(m["early"]["value"]),
                "Late": fmt(m["late"]["value"]),
                "Missed": fmt(m["missed"]["value"]),
                "Safe traj.": c["n_traj_safe"],
                "Safe interrupted [95% CI]": fmt_ci(m["safe_interrupted"]),
                "Traj. F1": fmt(m["traj_f1"]["value"]),
            }
        )
    return _frame(rows, ["Rank", "Judge"])


# --------------------------------------------------------------------------- compare tab


def judge_choices(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(display name, id) of the ranked judges."""
    return [(f"{e['display_name']} ({e['id']})", e["id"]) for e in report["judges"]]


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


def paired(report: Mapping[str, Any], a: str, b: str) -> dict[str, dict[str, Any]]:
    """metric -> {value, ci} of the paired difference a - b from the JSON (negated when the JSON
    holds b - a); {} when the JSON carries none for this pair."""
    pdiff = report.get("paired_differences") or {}
    for p in pdiff.get("pairs", []):
        if (p["a"], p["b"]) == (a, b):
            return dict(p["diff"])
        if (p["a"], p["b"]) == (b, a):
            return {
                m: {"value": _neg(d["value"]), "ci": [_neg(d["ci"][1]), _neg(d["ci"][0])]}
                for m, d in p["diff"].items()
            }
    return {}


def _significance(d: Mapping[str, Any] | None, higher_is_better: bool) -> str | None:
    """'yes: A better' / 'yes: B better' / 'no' from a paired difference; None without one."""
    if not d or d["value"] is None or d["ci"][0] is None:
        return None
    lo, hi = d["ci"]
    if lo > 0 or hi < 0:
        better_a = (d["value"] > 0) == higher_is_better
        return f"yes: {'A' if better_a else 'B'} better"
    return "no"


def compare_table(res: Results, a: str, b: str) -> tuple[pd.DataFrame, str]:
    """Two judges side by side on every metric, with the paired difference A - B and its 95%
    interval where the JSON has one; a one-line summary per headline metric."""
    ea, eb = res.judge(a), res.judge(b)
    diffs = paired(res.report, a, b) if a != b else {}
    rows = []
    verdicts = []
    for m in res.report["metrics"]:
        name = m["name"]
        d = diffs.get(name)
        sig = _significance(d, bool(m["higher_is_better"]))
        if sig is not None and name in HEADLINE:
            verdicts.append(f"**{md_escape(m['label'])}**: {sig}")
        rows.append(
            {
                "Metric": m["label"],
                "A": fmt_ci(ea["metrics"][name]),
                "B": fmt_ci(eb["metrics"][name]),
                "A − B [95% paired CI]": fmt_ci(d) if d else DASH,
                "Significant": DASH if sig is None else sig,
            }
        )
    head = (
        f"**A** = {md_escape(ea['display_name'])} (rank {ea['rank']}), "
        f"**B** = {md_escape(eb['display_name'])} (rank {eb['rank']})."
    )
    if a == b:
        summary = head + " Pick two different judges."
    elif not diffs:
        summary = head + (
            " This leaderboard.json carries no paired differences for the pair: regenerate it "
            "with `python bench/leaderboard.py`."
        )
    else:
        summary = (
            head + " Paired bootstrap over the same trajectory resamples; significant = the 95% "
            "interval of A − B excludes 0. " + "; ".join(verdicts)
        )
    return pd.DataFrame(rows), summary


def disagreements(
    res: Results, a: str, b: str, limit: int = DISAGREE_LIMIT
) -> tuple[pd.DataFrame, str]:
    """Decision points where the two judges answer a different act (evaluated test rows first,
    then the rest), from their predictions files, with the gold act from the ground truth."""
    try:
        va, vb = res.verdicts(a), res.verdicts(b)
    except SpaceDataError as e:
        return pd.DataFrame(), str(e)
    gt = res.ground_truth
    ids = [i for i in va.rows if i in vb.rows and va.rows[i]["act"] != vb.rows[i]["act"]]

    def evaluated(i: str) -> bool:
        r = gt.get(i)
        return bool(r and r.get("split") == "test" and not r.get("disputed"))

    def act(v: Mapping[str, Any]) -> Any:
        return v["act"] or f"({v['status']})"

    ids.sort(key=lambda i: (not evaluated(i), i))
    both = sum(1 for i in va.rows if i in vb.rows)
    rows = []
    for i in ids[:limit]:
        g = gt.get(i, {})
        ra, rb = va.rows[i], vb.rows[i]
        rows.append(
            {
                "Decision point": i,
                "Gold": g.get("act", "?"),
                "Split": (
                    "test"
                    if evaluated(i)
                    else g.get("split", "?") + (" (disputed)" if g.get("disputed") else "")
                ),
                "A act": act(ra),
                "A risk": fmt_risk(ra["risk"]),
                "B act": act(rb),
                "B risk": fmt_risk(rb["risk"]),
            }
        )
    note = f"{len(ids)} of {both} decision points answered by both get a different act"
    note += f" (first {limit} shown)." if len(ids) > limit else "."
    cols = ["Decision point", "Gold", "Split", "A act", "A risk", "B act", "B risk"]
    return _frame(rows, cols), note


# --------------------------------------------------------------------------- browse tab


def browse_ids(
    res: Results,
    texts: Texts,
    *,
    source: str | None = ALL,
    act: str | None = "Any",
    search: str | None = None,
    limit: int = BROWSE_LIMIT,
) -> tuple[list[str], str]:
    """Decision point ids for the Browse dropdown (ground-truth order), filtered by source, gold
    act and an id substring; at most ``limit``, with a note saying how many matched."""
    rows: Iterable[Mapping[str, Any]] = res.ground_truth.values()
    if not res.ground_truth:
        rows = ({"id": i, "source": i.split(":", 1)[0]} for i in texts.offsets)
    needle = (search or "").strip().lower()
    out = []
    for r in rows:
        if source and source != ALL and r.get("source") != source:
            continue
        if act and act != "Any" and r.get("act") != act:
            continue
        if needle and needle not in str(r["id"]).lower():
            continue
        out.append(str(r["id"]))
    note = f"{len(out)} decision points match"
    if len(out) > limit:
        note += f"; the first {limit} are listed (narrow the filters or type an id)"
    return out[:limit], note + "."


def verdict_table(res: Results, did: str) -> pd.DataFrame:
    """Every ranked judge's verdict on one decision point (its predictions file's last line)."""
    rows = []
    for e in res.judges:
        try:
            v = res.verdicts(e["id"]).rows.get(did)
        except SpaceDataError as err:
            log.warning("%s", err)
            continue
        if v is None:
            continue
        rows.append(
            {
                "Judge": e["display_name"],
                "Act": v["act"] or DASH,
                "Risk": fmt_risk(v["risk"]),
                "Binary": v["binary"] or DASH,
                "Status": v["status"] or DASH,
                "fail / harm / src": " / ".join(str(v[k] or DASH) for k in ("fail", "harm", "src")),
                "Reason": str(v["reason"] or "")[:300],
            }
        )
    cols = ["Judge", "Act", "Risk", "Binary", "Status", "fail / harm / src", "Reason"]
    return _frame(rows, cols)
