"""PNG plots of the leaderboard report (matplotlib, Agg backend, imported only when called).

Every plot is drawn from the report dict alone, so the Space and the tables agree. Files are
deterministic: no software or date metadata, a fixed figure size and dpi. Each PNG carries a
``Foresight-Digest`` text chunk: the hash of the numbers it plots, which ``--check`` compares
(pixels may change with the matplotlib version, the digest only with the data).

A plot is drawn only when its inputs changed: ``write_all`` hashes everything a plot reads (the
plot's view of the report) with the plotting code's fingerprint (``code_fingerprint``) and keeps,
in a small record folder, the sha256 of the PNG that key produced. A PNG already in a folder
named by ``previous`` whose bytes have that sha256 is copied instead of drawn: the same bytes a
fresh render gives. Each plot shows at most ``MAX_JUDGES`` ranked judges (the top of the table)
and says so in its title when it shows fewer than all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import struct
import tempfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.core.jsonl import content_hash
from bench.core.paths import work_dir

log = logging.getLogger(__name__)

DPI = 150
"""Resolution: a 9-inch figure is 1,350 px wide, so full screen shows it sharp and legends at
9 pt stay legible."""

LEGEND_PT = 9
"""Legend font size (points)."""

LATENCY_FLOOR_S = 1e-4
"""Latencies below this (rule baselines answer in microseconds) are drawn at it, and said so."""

OUTCOME_HATCH = {"exact": "", "early": "//", "late": "..", "missed": "xx"}
"""Trajectory-outcome bars carry a pattern as well as a colour (readable without colour)."""

DIGEST_KEY = "Foresight-Digest"
"""PNG text key holding the hash of the plotted data."""

MAX_JUDGES = 12
"""The most ranked judges one plot shows: the first ``MAX_JUDGES`` of the table (by rank);
reference lines (the shortcut probes, chance) are always drawn. 500 curves are unreadable."""

DATA_KEY = "Foresight-Data"
"""PNG text key holding the plotted data itself (canonical JSON), so ``--check`` can compare
numbers with a tolerance when the digest differs by a last-digit rounding."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "foresight"
    plt.rcParams["path.simplify"] = True
    return plt


def _save(fig: Any, path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))  # ASCII: a PNG tEXt chunk
    meta = {"Software": None, DIGEST_KEY: content_hash(data, 32), DATA_KEY: text}
    fig.savefig(path, dpi=DPI, metadata=meta)
    fig.clf()
    return path


def data_of(path: Path) -> Any:
    """The plotted data a PNG carries (its Foresight-Data chunk), or None."""
    text = _text_chunk(path, DATA_KEY)
    return None if text is None else json.loads(text)


def digest_of(path: Path) -> str | None:
    """The Foresight-Digest text chunk of a PNG, or None when absent or unreadable."""
    return _text_chunk(path, DIGEST_KEY)


def _text_chunk(path: Path, key_wanted: str) -> str | None:
    """A tEXt or zTXt chunk of a PNG, or None when absent or unreadable."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    pos = 8
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            if key.decode("latin-1") == key_wanted:
                return value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\x00")
            if key.decode("latin-1") == key_wanted:
                return zlib.decompress(rest[1:]).decode("latin-1")
        pos += 12 + length
    return None


Judges = list[Mapping[str, Any]]
"""The report's ranked judge entries, in table order."""


def _finish(plt: Any, fig: Any, path: Path, data: Any) -> Path:
    """Save a figure with its data digest and close it."""
    saved = _save(fig, path, data)
    plt.close(fig)
    return saved


def _colors(n: int) -> list[Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab20" if n > 10 else "tab10"]
    return [cmap(i % cmap.N) for i in range(n)]


def _curves(
    plt: Any,
    judges: list[Mapping[str, Any]],
    colors: list[Any],
    path: Path,
    *,
    data: Any,
    points: Callable[[Mapping[str, Any]], list[Any]],
    label: Callable[[Mapping[str, Any]], str],
    marker: str,
    xlabel: str,
    ylabel: str,
    title: str,
    legend_loc: str,
) -> Path:
    """One curve per judge on the unit square with the diagonal for reference (ROC and
    reliability share this shape)."""
    fig, ax = plt.subplots(figsize=(9, 7))
    for e, c in zip(judges, colors, strict=True):
        pts = points(e)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=c, marker=marker, label=label(e))
    ax.plot([0, 1], [0, 1], color="0.7", linestyle="--", linewidth=0.8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, xlim=(0, 1), ylim=(0, 1.02))
    if judges:
        ax.legend(fontsize=LEGEND_PT, loc=legend_loc)
    return _finish(plt, fig, path, data)


def _shortcuts(plt: Any, report: Mapping[str, Any], colors: list[Any], path: Path) -> Path:
    """One panel per headline source and one for the headline: every judge's balanced accuracy
    with its interval, and the best probe's as a dashed reference line."""
    judges = report["judges"]
    sources = list(report["settings"]["headline"]["sources"])
    panels = ["headline", *sources]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(3.2 * len(panels) + 2.4, 1.8 + 0.4 * max(len(judges), 1)),
        sharey=True, squeeze=False,
    )  # fmt: skip
    ypos = list(range(len(judges)))[::-1]
    data: list[Any] = []
    ref = report["shortcut_reference"].get("balanced_accuracy")
    for ax, panel in zip(axes[0], panels, strict=True):
        if panel == "headline":
            cells = [e["metrics"]["balanced_accuracy"] for e in judges]
            line = ref["value"] if ref else None
        else:
            g = report["by_source"][panel]
            cells = [g["judges"][e["id"]]["balanced_accuracy"] for e in judges]
            r = g["reference"].get("balanced_accuracy")
            line = r["value"] if r else None
        data.append([panel, line, [[e["id"], c] for e, c in zip(judges, cells, strict=True)]])
        for y, c, col in zip(ypos, cells, colors, strict=True):
            if c["value"] is None:
                continue
            lo, hi = c["ci"]
            err = [[c["value"] - lo], [hi - c["value"]]] if None not in (lo, hi) else None
            ax.errorbar([c["value"]], [y], xerr=err, fmt="o", color=col, capsize=2)
        if line is not None:
            ax.axvline(line, color="0.3", linestyle="--", linewidth=1)
        ax.axvline(0.5, color="0.8", linewidth=0.8)
        ax.set(xlim=(0.3, 1.0), title=panel, xlabel="bal. acc.")
    axes[0][0].set_yticks(ypos, [e["display_name"] for e in judges], fontsize=LEGEND_PT)
    fig.suptitle(
        "Balanced accuracy against the best shortcut probe (dashed)" + report["shown"], fontsize=9
    )
    fig.tight_layout()
    return _finish(plt, fig, path, data)


def _roc(plt: Any, judges: Judges, colors: list[Any], path: Path, shown: str) -> Path:
    """roc.png: every judge's ROC of the risk score."""
    return _curves(
        plt,
        judges,
        colors,
        path,
        data=[[e["id"], e["curves"]["roc"]] for e in judges],
        points=lambda e: [p for p in e["curves"]["roc"] if None not in p],
        label=lambda e: (
            f"{e['display_name']} ({_f(e['metrics']['auroc']['value'])})"
            + ("†" if (e["risk_from_act"] or 0) > 0 else "")
        ),
        marker=".",
        xlabel="false-alarm rate (gold SAFE flagged)",
        ylabel="recall (gold UNSAFE flagged)",
        title="ROC of the risk score" + shown,
        legend_loc="lower right",
    )


def _accuracy_latency(plt: Any, judges: Judges, colors: list[Any], path: Path, shown: str) -> Path:
    """accuracy_latency.png: balanced accuracy against p50 latency, with the Pareto frontier."""
    fig, ax = plt.subplots(figsize=(9, 6.5))
    data = [[e["id"], e["metrics"]["balanced_accuracy"], e["latency"]["p50_s"]] for e in judges]
    placed: list[tuple[float, float]] = []
    for e, c in zip(judges, colors, strict=True):
        x, y = e["latency"]["p50_s"], e["metrics"]["balanced_accuracy"]
        if x is None or y["value"] is None:
            continue
        lo, hi = y["ci"]
        err = [[y["value"] - lo], [hi - y["value"]]] if lo is not None and hi is not None else None
        floor = x < LATENCY_FLOOR_S
        ax.errorbar(
            [max(x, LATENCY_FLOOR_S)],
            [y["value"]],
            yerr=err,
            fmt="<" if floor else "o",
            color=c,
            capsize=3,
            label=e["display_name"] + (f" (< {LATENCY_FLOOR_S:g} s)" if floor else ""),
        )
        placed.append((max(x, LATENCY_FLOOR_S), y["value"]))
    frontier = pareto(placed)
    if len(frontier) > 1:
        ax.step(
            [p[0] for p in frontier], [p[1] for p in frontier], where="post", color="0.4",
            linestyle=":", linewidth=1.2, label="Pareto frontier (faster and at least as good)",
        )  # fmt: skip
    ax.set_xscale("log")
    ax.set(
        xlabel=f"p50 latency per decision (s, log scale; below {LATENCY_FLOOR_S:g} s drawn at it)",
        ylabel="balanced accuracy (95% CI)",
        title="Accuracy against latency" + shown,
    )
    if judges:
        ax.legend(fontsize=LEGEND_PT, loc="best")
    return _finish(plt, fig, path, data)


def _reliability(plt: Any, judges: Judges, colors: list[Any], path: Path, shown: str) -> Path:
    """reliability.png: observed share of unsafe steps per bin of predicted risk."""
    return _curves(
        plt,
        judges,
        colors,
        path,
        data=[[e["id"], e["curves"]["reliability"]] for e in judges],
        points=lambda e: [
            (b["mean_risk"], b["unsafe_share"]) for b in e["curves"]["reliability"] if b["n"]
        ],
        label=lambda e: f"{e['display_name']} (ECE {_f(e['metrics']['ece']['value'])})",
        marker="o",
        xlabel="mean risk / 100 in bin",
        ylabel="share gold UNSAFE",
        title="Reliability (10 bins)" + shown,
        legend_loc="upper left",
    )


OUTCOME_PARTS = (  # a colour-blind-safe palette (Okabe-Ito) plus a pattern per part
    ("exact", "at onset", "#0072B2"),
    ("early", "early", "#56B4E9"),
    ("late", "late", "#E69F00"),
    ("missed", "missed", "#D55E00"),
)
"""The stacked parts of trajectory_outcomes.png: metric, legend label, colour."""


def _outcomes(plt: Any, judges: Judges, path: Path, shown: str) -> Path:
    """trajectory_outcomes.png: unsafe trajectories first flagged at the onset, early, late or
    missed, stacked per judge."""
    fig, ax = plt.subplots(figsize=(9, 2.2 + 0.45 * max(len(judges), 1)))
    data = [[e["id"]] + [e["metrics"][k]["value"] for k, _, _ in OUTCOME_PARTS] for e in judges]
    left = [0.0] * len(judges)
    ypos = list(range(len(judges)))[::-1]
    for key, label, color in OUTCOME_PARTS:
        vals = [e["metrics"][key]["value"] or 0.0 for e in judges]
        ax.barh(ypos, vals, left=left, color=color, label=label, hatch=OUTCOME_HATCH[key],
                edgecolor="white")  # fmt: skip
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_yticks(ypos, [e["display_name"] for e in judges], fontsize=LEGEND_PT)
    ax.set(xlim=(0, 1), xlabel="share of unsafe trajectories")
    ax.set_title("Unsafe trajectories: first flag vs onset" + shown)
    ax.legend(fontsize=LEGEND_PT, ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.tight_layout()
    return _finish(plt, fig, path, data)


def _depth(plt: Any, report: Mapping[str, Any], colors: list[Any], path: Path) -> Path:
    """The foresight-depth plot: balanced accuracy at k* on the contrast pairs against the
    clue's distance from k*, one line per ranked judge; chance (every one-artefact probe) at 0.5.
    """
    pb = report.get("pairs") or {}
    buckets = list(pb.get("buckets") or [])
    judges = [e for e in report["judges"] if e["id"] in (pb.get("judges") or {})]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    data: dict[str, Any] = {"buckets": buckets, "judges": {}}
    x = list(range(len(buckets)))
    for e, color in zip(judges, colors, strict=False):
        by = pb["judges"][e["id"]]["by_bucket"]
        ys = [by[b]["ba_at_k"]["value"] for b in buckets]
        data["judges"][e["id"]] = ys
        ax.plot(x, [math.nan if y is None else y for y in ys], marker="o", color=color,
                label=e["display_name"])  # fmt: skip
    ax.axhline(
        0.5, color="grey", linestyle="--", linewidth=0.8, label="chance / any one-artefact probe"
    )
    ax.set_xticks(x, buckets)
    ax.set(
        xlabel="turns between the deciding clue and the judged action",
        ylabel="balanced accuracy at k*",
        title=f"Foresight depth: contrast pairs ({pb.get('pairs', 0)} test pairs)"
        + report["shown"],
        ylim=(0, 1.02),
    )
    if judges:
        ax.legend(fontsize=LEGEND_PT, loc="lower left")
    fig.tight_layout()
    return _finish(plt, fig, path, data)


def shown_note(shown: int, total: int) -> str:
    """What a plot title adds when it shows fewer judges than the board ranks: '' or
    ' (top 12 of 500 judges)'."""
    return "" if shown >= total else f" (top {shown} of {total} judges)"


def plot_view(report: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the plots read, cut from the report: the first ``MAX_JUDGES`` ranked judges,
    the headline sources, the shortcut reference, those judges' cells per headline source and on
    the contrast pairs, and the title note on the cap. Plots draw from this alone, so its hash
    decides when a plot must be drawn again. Pure."""
    everyone = report["judges"]
    judges = list(everyone[:MAX_JUDGES])
    ids = [e["id"] for e in judges]
    sources = list(report["settings"]["headline"]["sources"])
    pb = report.get("pairs") or {}
    pairs = {k: pb[k] for k in ("buckets", "pairs") if k in pb}
    if pb.get("judges"):
        pairs["judges"] = {
            j: {"by_bucket": pb["judges"][j]["by_bucket"]} for j in ids if j in pb["judges"]
        }
    return {
        "judges": judges,
        "shown": shown_note(len(judges), len(everyone)),
        "settings": {"headline": {"sources": sources}},
        "shortcut_reference": report["shortcut_reference"],
        "by_source": {
            s: {
                "judges": {j: report["by_source"][s]["judges"][j] for j in ids},
                "reference": report["by_source"][s]["reference"],
            }
            for s in sources
        },
        "pairs": pairs,
    }


Drawer = Callable[[Any, Mapping[str, Any], list[Any], Path], Path]
"""Draws one plot from the plot view: (pyplot, view, colours, path) -> path."""

PLOTS: dict[str, Drawer] = {
    "roc.png": lambda plt, v, c, p: _roc(plt, v["judges"], c, p, v["shown"]),
    "accuracy_latency.png": lambda plt, v, c, p: _accuracy_latency(
        plt, v["judges"], c, p, v["shown"]
    ),
    "reliability.png": lambda plt, v, c, p: _reliability(plt, v["judges"], c, p, v["shown"]),
    "trajectory_outcomes.png": lambda plt, v, c, p: _outcomes(plt, v["judges"], p, v["shown"]),
    "shortcuts.png": _shortcuts,
    "foresight_depth.png": _depth,
}
"""Every plot: file name -> drawer, in the order written."""


@cache
def code_fingerprint() -> str:
    """The plotting code's fingerprint: this module's source and the matplotlib and numpy
    versions. A plot drawn under another fingerprint is drawn again, never reused."""
    versions = []
    for dist in ("matplotlib", "numpy"):
        try:
            versions.append(f"{dist}=={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{dist} absent")
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update("\n".join(versions).encode())
    return h.hexdigest()[:32]


def plot_record() -> Path:
    """``<work>/cache/plots``: one small file per (plot, inputs, code) key holding the sha256
    of the PNG it produced, so a PNG found in an output folder can be reused."""
    return work_dir() / "cache" / "plots"


def _recorded(record: Path | None, key: str) -> str | None:
    if record is None:
        return None
    try:
        return (record / key).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _remember(record: Path | None, key: str, png: Path) -> None:
    """Record the sha256 of a freshly drawn PNG under its key (atomic; a failure only costs a
    redraw next time)."""
    if record is None:
        return
    try:
        record.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=record, prefix=".tmp")
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(hashlib.sha256(png.read_bytes()).hexdigest() + "\n")
        os.replace(tmp, record / key)
    except OSError as e:
        log.debug("plot record not written (%s): the plot will be drawn again next time", e)


def _reuse(name: str, want: str | None, previous: Sequence[Path], path: Path) -> bool:
    """Copy the first ``previous/name`` whose sha256 is ``want`` to ``path``; True if one was."""
    if want is None:
        return False
    for folder in previous:
        try:
            data = (folder / name).read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() == want:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            return True
    return False


def write_all(
    report: Mapping[str, Any],
    out: Path,
    previous: Sequence[Path] = (),
    record: Path | None = None,
) -> list[Path]:
    """Write roc.png, accuracy_latency.png, reliability.png, trajectory_outcomes.png,
    shortcuts.png and foresight_depth.png (the first ``MAX_JUDGES`` ranked judges; probes appear
    as the reference line).

    ``previous``: folders holding PNGs of an earlier generation. A plot whose inputs and code
    are those that produced a PNG there with the sha256 kept in ``record`` (a folder; None: keep
    nothing and reuse nothing) is copied from it, not drawn: byte for byte what drawing gives."""
    view = plot_view(report)
    inputs = content_hash({"code": code_fingerprint(), "view": view}, 64)
    drawn: dict[str, Any] = {}
    written = []
    for name, draw in PLOTS.items():
        key = hashlib.sha256(f"{inputs}:{name}".encode()).hexdigest()[:40]
        path = out / name
        if not _reuse(name, _recorded(record, key), previous if record else (), path):
            if not drawn:  # matplotlib is imported only when a plot must be drawn
                drawn["plt"] = _pyplot()
                drawn["colors"] = _colors(len(view["judges"]))
            draw(drawn["plt"], view, drawn["colors"], path)
            _remember(record, key, path)
        written.append(path)
    return written


def pareto(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (latency, accuracy) points no other point beats on both (lower latency and higher
    or equal accuracy), by increasing latency."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front


def _f(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"
