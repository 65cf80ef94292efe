"""How values are written on the page: numbers and intervals for table cells, and text escaped
for Markdown or HTML. Every other module of the Space formats through these, so a cell reads
the same in every tab. Standard library only (the Space runs from ``space/`` alone)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

DASH = "–"
"""What an undefined value shows."""


def fmt(x: float | None, nd: int = 3) -> str:
    """A number for a table; '–' for undefined."""
    return DASH if x is None else f"{x:.{nd}f}"


def fmt_ci(m: Mapping[str, Any]) -> str:
    """'value [lo, hi]' from a {value, ci} entry."""
    if m.get("value") is None:
        return DASH
    lo, hi = m.get("ci") or (None, None)
    return f"{m['value']:.3f} [{fmt(lo)}, {fmt(hi)}]"


def fmt_risk(risk: Any) -> str:
    """A verdict's risk score as written in its predictions file; '–' when it has none."""
    return DASH if risk is None else str(risk)


def open_label(v: bool | None) -> str:
    """Open-weights cell."""
    return {True: "yes", False: "no"}.get(v, DASH) if v is not None else DASH


def md_escape(s: str) -> str:
    """Text safe inside Markdown (no HTML, no emphasis, no table pipes)."""
    out = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "\\`*_[]|#":
        out = out.replace(ch, "\\" + ch)
    return out


def esc(s: Any) -> str:
    """Any value as escaped HTML text ('' for None)."""
    return html.escape("" if s is None else str(s))
