"""The leaderboard as table-ready rows (``leaderboard_rows.json``): what the Space shows.

``build_rows`` reads only the report dict of ``bench.report.report.build_report`` and presents
it once, for every reader that is not this package: each board (all data, every source,
category, subset and level, and the lite split) as one row per judge, with

- its values as a table shows them (rounded to three places) and its 95% interval as text;
- its margin over the shortcut probes as text (``margin_text``, the one formatter of a margin,
  which the markdown and HTML tables use too);
- the order of the judges for every rank metric: on all data by tie-group rank, then value,
  then id (``bench.report.report.rank_key``); in a group by value, then id (groups are not
  ranked);

and the column definitions of every metric from ``bench.metrics.spec``. The Space filters, picks
and renders these rows: it formats no margin and computes no rank (docs/space.md). Layout in
docs/metrics.md, "leaderboard_rows.json".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from bench.metrics.spec import (
    BOARD_METRICS,
    BREAKDOWN_METRICS,
    METRICS,
    PAIR_SPECS,
    RANK_METRICS,
    SPEC,
    SPECS,
    MetricSpec,
)
from bench.report.report import rank_key

ROWS_SCHEMA = "foresight-leaderboard-rows/1"
"""Version tag of the rows layout (docs/metrics.md)."""

DASH = "–"
"""What an undefined value shows."""


class Cell(TypedDict):
    """A value as the tables show it."""

    value: float | None
    """Rounded to three places; None when undefined."""
    interval: str
    """'[lo, hi]' (95%), '–' when undefined."""


class Margin(TypedDict):
    """A margin over the shortcut probes as the tables show it."""

    value: float | None
    """Rounded to three places."""
    verdict: str
    """above, tied or below ('–' when undefined)."""
    text: str
    """'+0.123 [+0.050, +0.190] above'."""
    short: str
    """'+0.123 (above)'."""


class Row(TypedDict):
    """One judge on one board."""

    id: str
    """The judge's id (leaderboard.json ``judges[].id``)."""
    rank: dict[str, int | None]
    """Rank metric -> tie-group rank on this board (all data and lite only; {} in a group)."""
    cells: dict[str, Cell]
    """Metric -> its cell."""
    margins: dict[str, Margin]
    """Shortcut metric -> the judge's margin over the probes here; {} without probes."""


class Reference(TypedDict):
    """The probes' reference line closing a board, for one shortcut metric."""

    name: str
    """What the line is called."""
    cell: Cell
    """Its value (and interval on all data)."""


class Board(TypedDict):
    """One board: a row per judge, their order per rank metric, the reference line."""

    kind: str
    """all, source, category, subset, level or lite."""
    name: str
    """The group's name ('' for all data and lite)."""
    rows: list[Row]
    """One per judge, in the order of ``order[<the report's rank metric>]``."""
    order: dict[str, list[str]]
    """Rank metric -> judge ids in display order."""
    reference: dict[str, Reference]
    """Shortcut metric -> the reference line; {} without probes."""
    with_margins: bool
    """True when the board has a margin column (all data and lite with probes, sources)."""


def _num(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return DASH if x is None else format(x, spec)


def cell(c: Mapping[str, Any] | None) -> Cell:
    """A report cell ``{value, ci}`` as the tables show it."""
    if not c or c.get("value") is None:
        return {"value": None, "interval": DASH}
    lo, hi = c.get("ci") or (None, None)
    return {"value": _num(c["value"]), "interval": f"[{_fmt(lo)}, {_fmt(hi)}]"}


def margin_text(m: Mapping[str, Any] | None) -> str:
    """'+0.123 [+0.050, +0.190] above' for a margin cell; '–' without one."""
    if not m or m["value"] is None:
        return DASH
    lo, hi = m["ci"]
    return f"{_fmt(m['value'], '+.3f')} [{_fmt(lo, '+.3f')}, {_fmt(hi, '+.3f')}] {m['verdict']}"


def margin(m: Mapping[str, Any] | None) -> Margin:
    """A margin cell ``{value, ci, verdict}`` as the tables show it."""
    if not m or m.get("value") is None:
        return {"value": None, "verdict": DASH, "text": DASH, "short": DASH}
    return {
        "value": _num(m["value"]),
        "verdict": str(m["verdict"]),
        "text": margin_text(m),
        "short": f"{m['value']:+.3f} ({m['verdict']})",
    }


def _order_by_value(
    rows: Sequence[Row], metric: str, values: Mapping[str, float | None]
) -> list[str]:
    sign = 1 if SPEC[metric].higher_is_better else -1
    return [
        r["id"]
        for r in sorted(
            rows, key=lambda r: (values[r["id"]] is None, -sign * (values[r["id"]] or 0.0), r["id"])
        )
    ]


def _references(refs: Mapping[str, Any]) -> dict[str, Reference]:
    """The headline reference lines (mean over sources of the best probe on each)."""
    name = "Shortcut reference (best probe per source)"
    return {m: {"name": name, "cell": cell(r)} for m, r in refs.items()}


def _full_board(report: Mapping[str, Any]) -> Board:
    """All data: the macro headline, tie-group ranks, margins, the reference line."""
    judges = report["judges"]
    rows: list[Row] = [
        {
            "id": e["id"],
            "rank": {m: e["ranks"][m]["rank"] for m in RANK_METRICS},
            "cells": {m: cell(e["metrics"][m]) for m in METRICS},
            "margins": {m: margin(c) for m, c in e["above_shortcuts"].items()},
        }
        for e in judges
    ]
    order = {m: [e["id"] for e in sorted(judges, key=rank_key(m))] for m in RANK_METRICS}
    reference = _references(report["shortcut_reference"])
    return {
        "kind": "all",
        "name": "",
        "rows": rows,
        "order": order,
        "reference": reference,
        "with_margins": bool(reference),
    }


def _group_board(
    report: Mapping[str, Any], kind: str, name: str, group: Mapping[str, Any]
) -> Board:
    """One group: its figures, ordered by value for every rank metric; for a source, the
    margins over its best probe and that probe's line."""
    ids = [e["id"] for e in report["judges"]]
    vals = {j: group["judges"].get(j, {}) for j in ids}
    margins = group.get("margins") or {}
    rows: list[Row] = [
        {
            "id": j,
            "rank": {},
            "cells": {m: cell(vals[j].get(m)) for m in BREAKDOWN_METRICS},
            "margins": {m: margin(c) for m, c in margins.get(j, {}).items()},
        }
        for j in ids
    ]
    order = {
        m: _order_by_value(rows, m, {j: (vals[j].get(m) or {}).get("value") for j in ids})
        for m in RANK_METRICS
    }
    probes = {p["id"]: p["display_name"] for p in report["probes"]}
    reference: dict[str, Reference] = {
        m: {
            "name": f"Best probe here: {probes.get(r['best_probe'], r['best_probe'])}",
            "cell": cell({"value": r["value"], "ci": None}),
        }
        for m, r in (group.get("reference") or {}).items()
    }
    return {
        "kind": kind,
        "name": name,
        "rows": rows,
        "order": order,
        "reference": reference,
        "with_margins": bool(margins),
    }


def _lite_board(report: Mapping[str, Any]) -> Board:
    """The lite split: lite ranks by the report's rank metric, margins over the lite probes."""
    lite = report.get("lite") or {}
    rm = report["settings"]["rank_metric"]
    rows: list[Row] = [
        {
            "id": e["id"],
            "rank": {rm: e["rank"]},
            "cells": {m: cell(c) for m, c in e["metrics"].items()},
            "margins": {m: margin(c) for m, c in (e.get("above_shortcuts") or {}).items()},
        }
        for e in lite.get("judges") or []
    ]
    reference = _references(lite.get("shortcut_reference") or {})
    order = {rm: [r["id"] for r in rows]}
    return {
        "kind": "lite",
        "name": "",
        "rows": rows,
        "order": order,
        "reference": reference,
        "with_margins": bool(reference),
    }


class PairGroup(TypedDict):
    """One judge's figures on one group of contrast pairs."""

    group: str
    """The clue kind, distance bucket or domain."""
    n: int
    """Test pairs in the group."""
    cells: dict[str, Cell]
    """Pair metric -> its cell."""


class PairRow(TypedDict):
    """One judge or probe on the contrast pairs."""

    id: str
    """The judge's id."""
    display_name: str
    """Its name as the tables show it."""
    role: str
    """judge or probe."""
    cells: dict[str, Cell]
    """Pair metric -> its cell over every test pair."""
    groups: dict[str, list[PairGroup]]
    """clue_kind, bucket, domain -> one entry per group, in the report's group order."""


PAIR_GROUP_KINDS = (
    ("clue_kind", "by_clue_kind", "clue_kinds"),
    ("bucket", "by_bucket", "buckets"),
    ("domain", "by_domain", "domains"),
)
"""Pair group kind -> the report's per-judge key and its list of groups."""


def _column(s: MetricSpec) -> dict[str, Any]:
    return {
        "key": s.key,
        "label": s.label,
        "short": s.short,
        "higher_is_better": s.higher_is_better,
        "format": s.fmt,
        "level": s.level,
        "rankable": s.rankable,
        "interval_in_groups": s.paired,
        "shortcut": s.shortcut,
        "definition": s.definition,
    }


def _pairs_board(report: Mapping[str, Any]) -> dict[str, Any]:
    """The contrast pairs: every judge, then every probe, in the report's order, with the pair
    metrics over all test pairs and per clue kind, distance bucket and domain."""
    pb = report.get("pairs") or {}
    metrics = [s.key for s in PAIR_SPECS]
    rows: list[PairRow] = []
    for e in [*report["judges"], *report["probes"]]:
        t = (pb.get("judges") or {}).get(e["id"])
        if t is None:
            continue
        groups: dict[str, list[PairGroup]] = {
            kind: [
                {
                    "group": g,
                    "n": int(t[key][g]["n"]),
                    "cells": {m: cell(t[key][g][m]) for m in metrics},
                }
                for g in pb.get(names) or []
            ]
            for kind, key, names in PAIR_GROUP_KINDS
        }
        rows.append(
            {
                "id": e["id"],
                "display_name": e["display_name"],
                "role": e["role"],
                "cells": {m: cell(t[m]) for m in metrics},
                "groups": groups,
            }
        )
    return {
        "pairs": int(pb.get("pairs") or 0),
        "columns": [_column(s) for s in PAIR_SPECS],
        "group_kinds": [kind for kind, _, _ in PAIR_GROUP_KINDS],
        "rows": rows,
    }


GROUP_KINDS = (
    ("source", "by_source"),
    ("category", "by_category"),
    ("subset", "by_subset"),
    ("level", "by_level"),
)
"""Board kind -> the report's breakdown key."""


def build_rows(report: Mapping[str, Any]) -> dict[str, Any]:
    """leaderboard_rows.json: the column definitions and every board, keyed ``all``, ``lite``
    and ``<kind>:<group>`` (``source:rjudge``, ``category:stepshield/SEC``, ...), and the
    contrast pairs' board under ``pairs``. Pure."""
    boards: dict[str, Board] = {"all": _full_board(report)}
    for kind, key in GROUP_KINDS:
        for name, group in report[key].items():
            boards[f"{kind}:{name}"] = _group_board(report, kind, name, group)
    boards["lite"] = _lite_board(report)
    return {
        "schema": ROWS_SCHEMA,
        "dataset_version": report["dataset_version"],
        "rank_metric": report["settings"]["rank_metric"],
        "columns": [_column(s) for s in SPECS],
        "board_columns": list(BOARD_METRICS),
        "boards": boards,
        "pairs": _pairs_board(report),
    }
