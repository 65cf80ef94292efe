"""Foresight Bench leaderboard: a Gradio app over the outputs of ``bench/leaderboard.py``.

    python space/app.py                       # leaderboards/ and data/build/ of this checkout
    python space/app.py --results DIR --build DIR --host 127.0.0.1 --port 7860

Host and port also come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (what Hugging Face Spaces
set). FORESIGHT_RESULTS_REPO names a Hub dataset holding the results instead of leaderboards/;
FORESIGHT_DATASET_REPO names the published benchmark dataset for Browse's text. No scoring
happens here: every number is read from leaderboard.json (docs/space.md).

This file holds the page layout and its callbacks. What it shows comes from the modules beside
it: data.py (reading results and text), tabs.py (each tab's tables), views.py (Browse's
HTML), about.py (the Submit and About text), fmt.py (cells and escaping). They are plain files
imported by name, not a package, because the Space runs from this folder alone.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python space/app.py` or a Space: data.py etc. sit beside this
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import gradio as gr  # noqa: E402
import pandas as pd  # noqa: E402

import about  # noqa: E402
import data as D  # noqa: E402
import tabs as T  # noqa: E402
import views as V  # noqa: E402

log = logging.getLogger(__name__)

CSS = """
.gradio-container {max-width: 100% !important;}
.fs-table td, .fs-table th, .fs-table td *, .fs-table th *, .fs-table .virtual-row,
.fs-table .virtual-row * {
  font-family: var(--font) !important; font-size: 0.86rem !important;}
.fs-table th {font-weight: 600;}
.fs-table td, .fs-table th, .fs-table td *, .fs-table th * {
  word-break: keep-all !important; overflow-wrap: normal !important; hyphens: none !important;}
.fs-kv {display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0 0 6px 0;}
.fs-kv span b {font-weight: 600;}
.fs-head {margin: 0 0 8px 0;}
.fs-block {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px 12px;
  margin: 8px 0;}
.fs-title {font-weight: 600; margin-bottom: 6px;}
.fs-gold {background: var(--background-fill-secondary);}
.fs-action {border-width: 2px;}
.fs-pre {white-space: pre-wrap; word-break: break-word; max-height: 320px; overflow: auto;
  margin: 2px 0 6px 0; padding: 6px; background: var(--background-fill-secondary);
  border-radius: 4px; font-size: 0.85em;}
.fs-turn {border-left: 3px solid var(--border-color-primary); padding-left: 8px; margin: 6px 0;}
.fs-cited {border-left-color: #d97706;}
.fs-turnhead {font-weight: 600; font-size: 0.9em;}
.fs-muted {color: #4b5563;}
/* contrast: the selected tab and muted notes at 4.5:1 or more on white (WCAG AA) */
button[role="tab"][aria-selected="true"], .tab-wrapper button.selected {
  color: #1d4ed8 !important; border-color: #1d4ed8 !important;}
.gradio-container {--body-text-color-subdued: #4b5563;}
.fs-h2 h2 {margin: 4px 0 2px 0;}
.fs-raw summary {cursor: pointer; font-weight: 600;}
.fs-pairgrid {display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 12px;}
@media (max-width: 760px) {.fs-pairgrid {grid-template-columns: minmax(0, 1fr);}}
.fs-side {min-width: 0;}
.fs-sidehead {font-weight: 600; margin: 4px 0;}
.fs-diff {background: #fef3c7; border-left-color: #b45309 !important; border-radius: 4px;}
"""

THEME = gr.themes.Default(
    primary_hue="blue",
    font=["system-ui", "Segoe UI", "Helvetica", "Arial", "sans-serif"],
    font_mono=["ui-monospace", "Menlo", "Consolas", "monospace"],
)
"""System fonts: nothing fetched from a font CDN (the page also works offline)."""

WIDTH_PX = {"#": 40, "Rank": 56, "Overall rank": 76, "Judge": 168, "Backend": 110, "Open": 56,
            "Shortcuts": 92, "p50 s": 78, "Safe interrupted": 110, "Reward": 80}  # fmt: skip
"""Column widths in pixels (others: 72 for a number, 124 for an interval). Fixed pixels, not
percentages: at 1366 px the main table fits the page; on a phone it scrolls sideways with Rank
and Judge pinned, and no header or cell is squeezed to a letter per line."""


def column_widths(df: pd.DataFrame) -> list[str | int]:
    """Pixel widths of a table's columns (``WIDTH_PX``)."""
    out: list[str | int] = []
    for c in df.columns:
        if c in WIDTH_PX:
            out.append(f"{WIDTH_PX[c]}px")
        elif str(c).endswith("95% CI"):
            out.append("118px")
        elif str(c).startswith(("vs ", "Best")):
            out.append("96px")
        else:
            out.append("72px")
    return out


def datatypes(df: pd.DataFrame) -> list[Any]:
    """``number`` for numeric columns (they sort as numbers), ``str`` for the others."""
    return ["number" if pd.api.types.is_numeric_dtype(df[c]) else "str" for c in df.columns]


ALT = {
    "roc": "ROC curve of each judge's risk score: true-positive rate against false-positive "
    "rate as the threshold moves, the diagonal being chance.",
    "reliability": "Reliability diagram per judge: the observed share of unsafe steps in each "
    "bin of predicted risk, the diagonal being perfect calibration.",
}
"""Alternative text of the Plots tab's images."""

HIDDEN: Any = False
"""``api_name`` of events that are not API endpoints: gradio 6 registers them as private (its
type hints say ``str | None``, its code takes False)."""

# --------------------------------------------------------------------------- callbacks


def _df(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(str) if not df.empty else df


WHOLE = ("#", "Rank", "Overall rank", "Lite rank")
"""Columns of whole numbers (a float column only because a reference row has none)."""


def three_places(df: pd.DataFrame) -> Any:
    """The table as a pandas Styler that shows every float with three decimals (0.770, not
    0.77), latency as ``fmt_latency`` does ('<0.001') and a missing value as '–', while the cell
    values stay numbers, so sorting is numeric."""
    fmt: dict[str, Any] = {
        c: "{:.0f}" if c in WHOLE else "{:.3f}"
        for c in df.columns
        if pd.api.types.is_float_dtype(df[c])
    }
    if "p50 s" in fmt:
        fmt["p50 s"] = T.fmt_latency
    return df.style.format(fmt, na_rep="–")


def _numeric(df: pd.DataFrame) -> Any:
    """A table update that keeps numbers numeric (sortable), shows them with three decimals
    and sizes columns in pixels."""
    if df.empty:
        return gr.Dataframe(value=df)
    return gr.Dataframe(
        value=three_places(df),
        datatype=datatypes(df),
        column_widths=column_widths(df),
        pinned_columns=2,
    )


def _image(
    path: str | None,
    label: str,
    alt: str,
    buttons: Sequence[Any] = ("fullscreen", "download"),
    **kw: Any,
) -> gr.Image:
    """A plot from the results folder, read-only, with its alternative text."""
    return gr.Image(
        path, label=label, alt_text=alt, type="filepath", interactive=False,
        buttons=list(buttons), **kw,
    )  # fmt: skip


def _table(value: pd.DataFrame, **kw: Any) -> gr.Dataframe:
    """A read-only, wrapping table in the page's table style."""
    return gr.Dataframe(value=value, interactive=False, wrap=True, elem_classes="fs-table", **kw)


Controls = dict[str, Any]
"""A tab's controls that other tabs or the permalink wire to, by name."""


@dataclass(frozen=True)
class Page:
    """What every tab is built from."""

    res: D.Results
    """The generation of the leaderboard outputs the page is built from."""
    texts: D.Texts
    """Decision-point text for Browse."""
    cb: dict[str, Callable[..., Any]]
    """The callbacks (``make_callbacks``): each reads the store's current generation."""
    store: D.ResultsStore
    """The results folder's current generation (reloaded when leaderboard.json changes)."""


Reader = Callable[[D.Results], Any]


def _runner(store: D.ResultsStore) -> Callable[[Reader], Any]:
    """``run(reader)``: the reader on the store's current generation (one generation, retried
    once on a mix, ``ResultsStore.call``); a SpaceDataError becomes the page's error message."""

    def run(reader: Reader) -> Any:
        try:
            return store.call(reader)
        except D.SpaceDataError as e:
            raise gr.Error(str(e)) from None

    return run


def make_callbacks(store: D.ResultsStore, texts: D.Texts) -> dict[str, Any]:
    """The app's callbacks over one results folder and one text source (pure readers), each
    on the generation current when it runs; ``open_<tab>`` fill a tab when it is opened."""
    run = _runner(store)

    def leaderboard(
        metric: str,
        search: str,
        source: str,
        category: str,
        backend: Sequence[str] | None,
        open_weights: str,
        fitted: str,
    ) -> tuple[pd.DataFrame, str]:
        df, note = run(
            lambda res: T.leaderboard_table(
                res,
                metric=metric,
                search=search,
                source=source,
                category=category,
                backend=backend or [],
                open_weights=open_weights or "Any",
                fitted=fitted or "Any",
            )
        )
        return _numeric(df), note

    def trajectories(search: str) -> pd.DataFrame:
        return _df(run(lambda res: T.trajectory_table(res, search)))

    def robustness(family: str) -> tuple[pd.DataFrame, str]:
        df, note = run(lambda res: T.robustness_table(res, family))
        return _df(df), note

    def compare(a: str, b: str) -> tuple[str, pd.DataFrame, str, pd.DataFrame]:
        if not a or not b:
            empty = pd.DataFrame()
            return "Pick two judges.", empty, "", empty

        def read(res: D.Results) -> tuple[str, pd.DataFrame, str, pd.DataFrame]:
            table, summary = T.compare_table(res, a, b)
            dis, note = T.disagreements(res, a, b) if a != b else (pd.DataFrame(), "")
            return summary, _df(table), note, _df(dis)

        return run(read)

    def browse_list(
        split: str, source: str, act: str, show: str, judge: str, search: str
    ) -> tuple[Any, str]:
        ids, note = run(
            lambda res: T.browse_ids(
                res, texts, split=split, source=source, act=act, show=show, judge=judge,
                search=search,
            )
        )  # fmt: skip
        return gr.Dropdown(choices=ids, value=ids[0] if ids else None), note

    def browse(did: str) -> tuple[pd.DataFrame, str, str]:
        if not did:
            return pd.DataFrame(), "<p class='fs-muted'>Pick a decision point.</p>", ""
        did = did.strip()
        return run(
            lambda res: (
                _df(T.verdict_table(res, did)),
                V.point_html(res, texts, did),
                V.raw_html(res, texts, did),
            )
        )

    def pairs_list(domain: str, clue_kind: str, bucket: str) -> tuple[Any, str]:
        ids, note = run(lambda res: T.pair_ids(res, domain, clue_kind, bucket))
        return gr.Dropdown(choices=ids, value=ids[0] if ids else None), note

    def pair(pid: str) -> tuple[pd.DataFrame, str]:
        return run(lambda res: _pair_view(res, texts, pid))

    return {
        "pairs_list": pairs_list,
        "pair": pair,
        "leaderboard": leaderboard,
        "trajectories": trajectories,
        "robustness": robustness,
        "compare": compare,
        "browse_list": browse_list,
        "browse": browse,
        **_tab_fills(run, texts),
    }


def _pair_view(res: D.Results, texts: D.Texts, pid: str | None) -> tuple[pd.DataFrame, str]:
    """One contrast pair: every judge's verdicts on both sides, and both sides' text."""
    entry = T.pair_index(res).get((pid or "").strip())
    if entry is None or not pid:
        return pd.DataFrame(), "<p class='fs-muted'>Pick a pair.</p>"
    return _df(T.pair_verdicts(res, pid.strip())), V.pair_html(res, texts, entry)


PAIR_FILTERS = ("domain", "clue_kind", "bucket")
"""The Pairs tab's filters, in input order."""


def _tab_fills(run: Callable[[Reader], Any], texts: D.Texts) -> dict[str, Callable[[], Any]]:
    """``open_<tab>``: the contents of each tab whose data lives in part files, read when the
    tab is opened (``TabSpec.lazy``), in the order of the components its builder returned."""

    def validity(res: D.Results) -> list[Any]:
        tdf, tnote = T.twin_table(res)
        ddf, dnote = T.diagnostic_table(res)
        return [
            _df(T.probe_table(res)),
            "### Hard pairs: StepShield twins\n" + tnote,
            _df(tdf),
            "### Diagnostic configs\n" + dnote,
            _df(ddf),
        ]

    def lite(res: D.Results) -> list[Any]:
        df, note = T.lite_table(res)
        return [note, _df(df)]

    def robustness(res: D.Results) -> list[Any]:
        df, note = T.robustness_table(res, D.ALL)
        fams = [D.ALL, *T.stress_families(res.report)]
        return [gr.Dropdown(choices=fams, value=D.ALL), note, _df(df)]

    def pairs(res: D.Results) -> list[Any]:
        df, note = T.pairs_table(res)
        groups = [_pairs_value(T.pairs_group_table(res, kind)) for kind, _ in T.PAIR_GROUPS]
        choices = T.pair_filters(res)
        ids, pnote = T.pair_ids(res)
        first = ids[0] if ids else None
        return [
            note,
            _pairs_value(df),
            *groups,
            *(gr.Dropdown(choices=choices[k], value=D.ALL) for k in PAIR_FILTERS),
            gr.Dropdown(choices=ids, value=first),
            pnote,
            *_pair_view(res, texts, first),
        ]

    return {
        f"open_{name}": functools.partial(run, fill)
        for name, fill in (
            ("validity", validity), ("lite", lite), ("robustness", robustness), ("pairs", pairs),
        )
    }  # fmt: skip


# --------------------------------------------------------------------------- layout


LEADERBOARD_KEYS = ("metric", "q", "source", "group", "backend", "open", "fitted")
"""URL parameters of the Leaderboard tab's controls, in input order (the permalink)."""
BROWSE_KEYS = ("id",)
"""URL parameter of Browse's decision point."""


def url_js(keys: Sequence[str], defaults: Sequence[Any]) -> str:
    """JavaScript run before a change callback: writes the controls' values into the page URL
    (``fs.writeUrl`` in static/page.js), so the address bar is always a permalink."""
    defs = [d if d is not None else "" for d in defaults]
    call = f"window.fs.writeUrl({json.dumps(list(keys))}, {json.dumps(defs)}, args)"
    return f"(...args) => window.fs ? {call} : args"  # without HEAD the callback still runs


HEADER_HELP = {
    "#": "Position in this group, ordered by the chosen metric",
    "Rank": "Rank on all data; judges whose paired bootstrap difference is not significant share a rank",
    "Overall rank": "The judge's rank on all data (groups are not ranked)",
    "Judge": "The judge's display name; ‡ fitted on this benchmark's dev split, † risk derived from the act on some steps",
    "Backend": "How the judge runs (the backend key of its judges.toml row)",
    "Open": "Open weights: yes, no, or not stated",
    "95% CI": "95% bootstrap interval, resampling trajectories within each source",
    "vs shortcuts": "Margin over the best single-artefact probe on each source (positive = better than the shortcut)",
    "vs best probe": "Margin over the best single-artefact probe on this source",
    "Shortcuts": "above = the margin's interval excludes 0; otherwise the judge is not distinguishable from a shortcut",
    "p50 s": "Median seconds per decision (<0.001 for baselines that do no model call)",
}  # fmt: skip
"""What the Space's own table headers mean, shown when hovering them (matched on the header's
text, its start, or its end for ``... 95% CI``), instead of the header repeating itself. A
metric's header shows its definition from leaderboard_rows.json (``metric_help_js``)."""


PAGE_JS = Path(__file__).resolve().parent / "static" / "page.js"
"""The page's scripts: permalinks, the tab in the URL, header tooltips."""

HEAD = (
    f"<script>\n{PAGE_JS.read_text(encoding='utf-8')}"
    f"window.fs.addHelp({json.dumps(HEADER_HELP)});\n</script>"
)
"""Page head (``launch(head=HEAD)``): static/page.js, and the explanations of the Space's own
columns (``HEADER_HELP``; the metrics' come from leaderboard_rows.json on load)."""


def _leaderboard_filters(res: D.Results) -> Controls:
    """The Leaderboard tab's row of controls, by URL parameter (no part file is read)."""
    rep = res.report
    with gr.Row(equal_height=True):
        search = gr.Textbox(
            label="Search judges",
            placeholder="name or id; commas for several",
            elem_id="search",
            scale=2,
            min_width=200,
        )
        metric = gr.Dropdown(
            choices=T.metric_choices(rep),
            value=rep["settings"]["rank_metric"],
            label="Rank by",
            scale=1,
            min_width=130,
        )
        source = gr.Dropdown(
            choices=[D.ALL, *T.sources(res)], value=D.ALL, label="Source", scale=1, min_width=130
        )
        category = gr.Dropdown(
            choices=[(D.ALL, D.ALL), *((T.group_label(c), c) for c in T.categories(res))],
            value=D.ALL,
            label="Category, subset or level",
            scale=1,
            min_width=150,
        )
        backend = gr.Dropdown(
            choices=T.backends(rep),
            value=[],
            multiselect=True,
            label="Backend (empty: all)",
            scale=1,
            min_width=150,
        )
        open_w = gr.Dropdown(
            choices=list(T.OPEN_CHOICES), value="Any", label="Open weights", scale=1,
            min_width=120,
        )  # fmt: skip
        fitted = gr.Dropdown(
            choices=list(T.FITTED_CHOICES), value="Any", label="Fitted on dev", scale=1,
            min_width=150,
        )  # fmt: skip
    comps = [metric, search, source, category, backend, open_w, fitted]
    return dict(zip(LEADERBOARD_KEYS, comps, strict=True))


def _wire_leaderboard(
    controls: Controls, table: gr.Dataframe, note: gr.Markdown, page: Page
) -> None:
    """Every control redraws the table (and writes the permalink); a source and a group
    exclude each other."""
    inputs = list(controls.values())
    defaults = [page.res.report["settings"]["rank_metric"], "", D.ALL, D.ALL, [], "Any", "Any"]
    for comp in inputs:
        comp.change(
            page.cb["leaderboard"],
            inputs,
            [table, note],
            api_name="leaderboard" if comp is controls["metric"] else HIDDEN,
            show_progress="hidden",
            js=url_js(LEADERBOARD_KEYS, defaults),
        )
    source, category = controls["source"], controls["group"]
    source.input(lambda s: D.ALL if s != D.ALL else gr.update(), source, category, api_name=HIDDEN)
    category.input(
        lambda c: D.ALL if c != D.ALL else gr.update(), category, source, api_name=HIDDEN
    )


def _leaderboard_tab(page: Page) -> Controls:
    """The Leaderboard tab; returns its controls by URL parameter (the permalink)."""
    res = page.res
    rep = res.report
    gr.Markdown("## Leaderboard", elem_classes="fs-h2")
    controls = _leaderboard_filters(res)
    df0, note0 = T.leaderboard_table(res, metric=rep["settings"]["rank_metric"])
    note = gr.Markdown(note0)
    table = _table(
        three_places(df0),
        max_height=620,
        elem_id="leaderboard-table",
        show_label=False,
        datatype=datatypes(df0),
        column_widths=column_widths(df0),
        pinned_columns=2,
    )
    pending = gr.Markdown(T.pending_markdown(res), elem_id="pending")
    _wire_leaderboard(controls, table, note, page)
    return {**controls, "_table": table, "_note": note, "_pending": pending}


def _trajectories_tab(page: Page) -> Controls:
    """Trajectory outcomes per judge."""
    res, cb = page.res, page.cb
    gr.Markdown("## Trajectories", elem_classes="fs-h2")
    gr.Markdown(
        "A deployed judge halts a trajectory at its first UNSAFE verdict. For unsafe "
        "trajectories: **caught** = first flag at or before the onset (at onset + "
        "early), **late** = after it, **missed** = never. **Safe interrupted** = safe "
        "trajectories with any flag."
    )
    tsearch = gr.Textbox(label="Search judges", placeholder="name or id")
    ttable = _table(
        cb["trajectories"](""),
        elem_id="traj-table",
        show_label=False,
    )
    tsearch.change(cb["trajectories"], tsearch, ttable, api_name="trajectories")
    if res.plot("trajectory_outcomes"):
        _image(
            res.plot("trajectory_outcomes"),
            "Trajectory outcomes",
            "Stacked bars per judge: the share of unsafe trajectories first flagged at the onset, early, late, or missed (colour and pattern per part).",
            buttons=["fullscreen"],
        )
    return {}


@dataclass(frozen=True)
class Lazy:
    """A tab filled when it is opened: ``fn(*inputs)`` gives ``outputs``' values."""

    fn: Callable[..., Any]
    """The fill callback (``make_callbacks``' ``open_<tab>``, or any other callback)."""
    outputs: list[Any]
    """The components it fills, in the order ``fn`` returns their values."""
    inputs: list[Any] = field(default_factory=list)
    """The components it reads."""


LAZY = "_lazy"
"""The key under which a tab's builder returns its ``Lazy`` fill."""


def _validity_tab(page: Page) -> Controls:
    """Shortcut probes, the twin pairs and the diagnostic configs: what the headline is not
    (filled when opened: its data is in part files)."""
    res = page.res
    gr.Markdown("## Validity", elem_classes="fs-h2")
    gr.Markdown(
        "### Shortcut probes\nEach probe sees **one artefact** of a decision point (the "
        "called tool's name, the step's position, the thought, the action text) and is "
        "fitted on dev. They are never ranked: the best of them on each source is the "
        "reference line on the Leaderboard tab, and a judge that does not clear it is not "
        "shown to measure judgment."
    )
    probes = _table(pd.DataFrame(), elem_id="probe-table", show_label=False)
    tnote = gr.Markdown("### Hard pairs: StepShield twins")
    twins = _table(pd.DataFrame(), elem_id="twin-table", show_label=False)
    dnote = gr.Markdown("### Diagnostic configs")
    diag = _table(pd.DataFrame(), elem_id="diagnostic-table", show_label=False)
    if res.plot("shortcuts"):
        _image(
            res.plot("shortcuts"),
            "Balanced accuracy against the best probe",
            "One panel for the headline and one per source: each judge's balanced accuracy with its interval, and a dashed line at the best shortcut probe.",
        )
    return {LAZY: Lazy(page.cb["open_validity"], [probes, tnote, twins, dnote, diag])}


def _lite_tab(page: Page) -> Controls:
    """The lite board (filled when opened)."""
    gr.Markdown("## Lite split", elem_classes="fs-h2")
    note = gr.Markdown()
    table = _table(pd.DataFrame(), elem_id="lite-table", show_label=False)
    return {LAZY: Lazy(page.cb["open_lite"], [note, table])}


def _robustness_tab(page: Page) -> Controls:
    """Every judge on the stress families (filled when opened)."""
    cb = page.cb
    gr.Markdown("## Robustness", elem_classes="fs-h2")
    # its choices come when the tab opens (a custom value: the API may name one before that)
    fam = gr.Dropdown(choices=[D.ALL], value=D.ALL, label="Stress family", allow_custom_value=True)
    note = gr.Markdown()
    table = _table(pd.DataFrame(), elem_id="robustness-table", show_label=False)
    fam.change(cb["robustness"], fam, [table, note], api_name="robustness")
    return {LAZY: Lazy(cb["open_robustness"], [fam, note, table])}


def _plots_tab(page: Page) -> Controls:
    """The ROC, reliability and latency plots."""
    res = page.res
    gr.Markdown("## Plots", elem_classes="fs-h2")
    with gr.Row():
        for key, label in (
            ("roc", "ROC curves"),
            ("reliability", "Reliability diagrams"),
        ):
            _image(res.plot(key), label, ALT[key], min_width=420)
    with gr.Row():
        _image(
            res.plot("accuracy_latency"),
            "Balanced accuracy against p50 latency",
            "Each judge's balanced accuracy with its interval against its median seconds per decision on a log scale, with the Pareto frontier dotted.",
            min_width=420,
        )
        gr.Markdown(
            "**ROC**: true-positive rate against false-positive rate as the risk "
            "threshold moves (judges without risk scores use CONTINUE = 0, ASK = 50, "
            "STOP = 100). **Reliability**: observed share of unsafe steps per bin of "
            "predicted risk; the diagonal is perfect calibration. **Latency**: "
            "median seconds per decision (warm-up calls excluded) on the hardware in "
            "the predictions file, so compare like with like."
        )
    return {}


def _compare_tab(page: Page) -> Controls:
    """The Compare tab; returns its judge selectors and disagreement table (a row opens in
    Browse)."""
    res, cb = page.res, page.cb
    judges = T.judge_choices(res.report)
    gr.Markdown("## Compare two judges", elem_classes="fs-h2")
    with gr.Row(equal_height=True):
        ja = gr.Dropdown(choices=judges, value=judges[0][1] if judges else None, label="Judge A")
        jb = gr.Dropdown(
            choices=judges,
            value=judges[1][1] if len(judges) > 1 else None,
            label="Judge B",
        )
    csummary = gr.Markdown()  # filled when the tab opens (the paired statistics are a part file)
    ctable = _table(pd.DataFrame(), elem_id="compare-table", show_label=False)
    cnote = gr.Markdown()
    cdis = _table(
        pd.DataFrame(),
        max_height=480,
        label="Where they disagree (click a row to open it in Browse)",
        elem_id="disagree-table",
    )
    defaults = [ja.value, jb.value]
    for comp in (ja, jb):
        comp.change(
            cb["compare"],
            [ja, jb],
            [csummary, ctable, cnote, cdis],
            api_name="compare" if comp is ja else HIDDEN,
            js=url_js(("a", "b"), defaults),
        )
    lazy = Lazy(cb["compare"], [csummary, ctable, cnote, cdis], [ja, jb])
    return {"a": ja, "b": jb, "disagree": cdis, LAZY: lazy}


def _pairs_value(df: pd.DataFrame) -> Any:
    """A pairs table's update: values numeric (sortable) and shown with three decimals."""
    if df.empty:
        return gr.Dataframe(value=df)
    return gr.Dataframe(value=three_places(df), datatype=datatypes(df))


def _pairs_tab(page: Page) -> Controls:
    """The contrast pairs: their board, the foresight-depth plot, and a pair viewer (both
    sides side by side with every judge's verdict on each); filled when opened."""
    res, texts, cb = page.res, page.texts, page.cb
    gr.Markdown("## Contrast pairs", elem_classes="fs-h2")
    note = gr.Markdown()
    board = _table(pd.DataFrame(), show_label=False, elem_id="pairs-table")
    groups = []
    for _, head in T.PAIR_GROUPS:
        with gr.Accordion(f"By {head.lower()}", open=False):
            groups.append(_table(pd.DataFrame(), show_label=False))
    if res.plot("foresight_depth"):
        _image(
            res.plot("foresight_depth"),
            "Foresight depth",
            "One line per judge: balanced accuracy at k* on the contrast pairs against the number of turns between the deciding clue and the judged action, with chance (any one-artefact probe) dashed at 0.5.",
        )
    gr.Markdown(
        "### One pair\nSide A (a careful monitor asks or stops at k*) and side B (it lets the "
        "same action run), each as a judge sees it; turns that differ between the sides are "
        "highlighted. Every judge's verdict on each side first, ✓ when its binary verdict "
        "matches the gold one.\n\n" + texts.origin
    )
    with gr.Row(equal_height=True):
        # choices come when the tab opens (custom values: the API may name one before that)
        opts: dict[str, Any] = {"value": D.ALL, "allow_custom_value": True}
        pdomain = gr.Dropdown([D.ALL], label="Domain", min_width=120, **opts)
        pkind = gr.Dropdown([D.ALL], label="Clue kind", min_width=120, **opts)
        pbucket = gr.Dropdown([D.ALL], label="Clue distance", min_width=100, **opts)
        pid = gr.Dropdown(
            [], value=None, label="Pair", allow_custom_value=True, min_width=200, scale=2
        )
    pnote = gr.Markdown()
    pverdicts = _table(pd.DataFrame(), show_label=False, elem_id="pair-verdicts")
    ppair = gr.HTML("", elem_id="pair")
    filters = [pdomain, pkind, pbucket]
    for comp in filters:
        comp.change(
            cb["pairs_list"], filters, [pid, pnote],
            api_name="pairs_list" if comp is pdomain else HIDDEN,
        )  # fmt: skip
    pid.change(cb["pair"], pid, [pverdicts, ppair], api_name="pair")
    outputs = [note, board, *groups, *filters, pid, pnote, pverdicts, ppair]
    return {LAZY: Lazy(cb["open_pairs"], outputs)}


def _browse_tab(page: Page) -> Controls:
    """The Browse tab; returns its split filter and decision-point selector."""
    res, texts, cb = page.res, page.texts, page.cb
    gr.Markdown("## Browse", elem_classes="fs-h2")
    gr.Markdown(
        "One decision point as a judge sees it: the policy, the turns so far and the "
        "proposed action, which has **not** run. Turns are numbered from 1 as the prompts "
        "number them (user and tool turns count); **k** counts the agent's actions only, so "
        "the proposed action is turn n + 1 and action k. Every judge's verdict is first, ✓ "
        "when its binary verdict (SAFE / UNSAFE) matches the gold one.\n\n" + texts.origin,
        elem_id="text-origin",
    )
    ids0, bnote0 = T.browse_ids(res, texts)
    judges = [(e["display_name"], e["id"]) for e in res.judges]
    with gr.Row(equal_height=True):
        bsplit = gr.Dropdown(
            choices=list(T.SPLIT_CHOICES), value="test", label="Split", scale=1, min_width=100
        )
        bsource = gr.Dropdown(
            choices=[D.ALL, *T.sources(res)], value=D.ALL, label="Source", scale=1,
            min_width=120,
        )  # fmt: skip
        bact = gr.Dropdown(
            choices=list(T.ACT_CHOICES), value="Any", label="Gold act", scale=1, min_width=100
        )
        bshow = gr.Dropdown(
            choices=list(T.SHOW_CHOICES), value="All points", label="Show", scale=1,
            min_width=150,
        )  # fmt: skip
        bjudge = gr.Dropdown(
            choices=judges, value=judges[0][1] if judges else None,
            label="Judge (for 'Judge wrong')", scale=1, min_width=150,
        )  # fmt: skip
        bsearch = gr.Textbox(label="Id contains", scale=1, min_width=120)
    bid = gr.Dropdown(
        choices=ids0,
        value=ids0[0] if ids0 else None,
        label="Decision point",
        allow_custom_value=True,
    )
    bnote = gr.Markdown(bnote0)
    b0 = cb["browse"](ids0[0] if ids0 else "")
    gr.Markdown("### Every judge's verdict")
    bverdicts = _table(b0[0], show_label=False, elem_id="verdict-table")
    bpoint = gr.HTML(b0[1], elem_id="point")
    with gr.Accordion("Raw outputs", open=False):
        braw = gr.HTML(b0[2])
    filters: list[gr.Dropdown | gr.Textbox] = [bsplit, bsource, bact, bshow, bjudge, bsearch]
    for comp in filters:
        comp.change(
            cb["browse_list"],
            filters,
            [bid, bnote],
            api_name="browse_list" if comp is bsource else HIDDEN,
        )
    bid.change(
        cb["browse"],
        bid,
        [bverdicts, bpoint, braw],
        api_name="browse",
        js=url_js(BROWSE_KEYS, [None]),
    )
    return {"id": bid, "split": bsplit}


def _submit_tab(page: Page) -> Controls:
    """How to add a judge."""
    gr.Markdown(about.submit_md(page.res))
    return {}


def _about_tab(page: Page) -> Controls:
    """Metric definitions, the reward matrix, the dataset and its card, licences, citation."""
    res, texts = page.res, page.texts
    gr.Markdown(about.about_md(res))
    card = about.dataset_card(texts)
    with gr.Accordion("Dataset card", open=False):
        gr.Markdown(
            card
            or "The dataset card is written by `python bench/build.py` into the built "
            "dataset; none is available here. "
            + texts.origin
        )
    return {}


@dataclass(frozen=True)
class TabSpec:
    """One tab of the page."""

    id: str
    """Its id: the ``?tab=`` value of a permalink, and ``gr.Tab(id=...)``."""
    label: str
    """Its button's label."""
    build: Callable[[Page], Controls]
    """Builds its content inside the tab; returns the controls others wire to ({} if none),
    and under ``LAZY`` the ``Lazy`` fill run each time the tab is opened (a tab whose data is
    in part files reads them only then)."""


TABS: tuple[TabSpec, ...] = (
    TabSpec("leaderboard", "Leaderboard", _leaderboard_tab),
    TabSpec("trajectories", "Trajectories", _trajectories_tab),
    TabSpec("validity", "Validity", _validity_tab),
    TabSpec("pairs", "Pairs", _pairs_tab),
    TabSpec("robustness", "Robustness", _robustness_tab),
    TabSpec("lite", "Lite", _lite_tab),
    TabSpec("plots", "Plots", _plots_tab),
    TabSpec("compare", "Compare", _compare_tab),
    TabSpec("browse", "Browse", _browse_tab),
    TabSpec("submit", "Submit", _submit_tab),
    TabSpec("about", "About", _about_tab),
)
"""The tab registry, in page order: the one place a tab's id and label are written."""


def _open_tab(spec: TabSpec, page: Page) -> Controls:
    """One tab: its content, its id recorded in the URL when selected, and, for a tab whose
    builder returned a ``Lazy`` fill, that fill run when it is selected (API ``open_<id>``)."""
    with gr.Tab(spec.label, id=spec.id) as tab:
        out = spec.build(page)
    tab.select(None, None, None, js=f"() => window.fs?.recordTab({json.dumps(spec.id)})")
    lazy = out.pop(LAZY, None)
    if isinstance(lazy, Lazy):
        tab.select(lazy.fn, lazy.inputs, lazy.outputs, api_name=f"open_{spec.id}")
    return out


def build(
    res: D.Results | None,
    texts: D.Texts,
    problem: str = "",
    store: D.ResultsStore | None = None,
) -> gr.Blocks:
    """The Blocks app. With no results, a page that says how to produce them. Callbacks read
    ``store``'s current generation (a store over ``res`` when none is given); a page opened
    after leaderboard.json changed shows the new generation's table and subtitle."""
    with gr.Blocks(title="Foresight Bench leaderboard", fill_width=True) as demo:
        gr.Markdown(
            "# Foresight Bench\nStep-level safety judges: given the policy, the trajectory so far "
            "and **one proposed action before it executes**, answer CONTINUE, ASK or STOP."
        )
        if res is None:
            gr.Markdown(f"**No leaderboard to show yet.** {problem}")
            with gr.Tabs(), gr.Tab("Submit"):
                gr.Markdown(about.SUBMIT_MD)
            return demo
        store = store or D.ResultsStore(res)
        page = Page(res, texts, make_callbacks(store, texts), store)
        sub = gr.Markdown(subtitle(res), elem_id="subtitle")
        with gr.Tabs() as tabs:
            controls = {t.id: _open_tab(t, page) for t in TABS}
        lb, cmp, br = controls["leaderboard"], controls["compare"], controls["browse"]

        def open_in_browse(evt: gr.SelectData, dis: pd.DataFrame) -> tuple[Any, Any]:
            row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
            did = str(dis.iloc[row, 0])
            return gr.Dropdown(value=did), gr.Tabs(selected="browse")

        cmp["disagree"].select(open_in_browse, cmp["disagree"], [br["id"], tabs], api_name=HIDDEN)
        restored = [*(lb[k] for k in LEADERBOARD_KEYS), cmp["a"], cmp["b"], br["split"], br["id"]]
        fresh = [sub, lb["_table"], lb["_note"], lb["_pending"]]

        def restore(request: gr.Request) -> list[Any]:
            """Apply the page URL's parameters (a permalink) to the controls, and show the
            current generation's subtitle and table when it is not the one built."""
            now = store.current()
            updates = T.permalink_updates(now, dict(request.query_params))
            if now.generation == res.generation:
                return [*updates, *(gr.update() for _ in fresh)]
            metric = now.report["settings"]["rank_metric"]
            table, note = page.cb["leaderboard"](metric, "", D.ALL, D.ALL, [], "Any", "Any")
            return [*updates, subtitle(now), table, note, T.pending_markdown(now)]

        # the tab is chosen in the page (a Tabs update from a load event is not applied)
        demo.load(restore, None, [*restored, *fresh], api_name=HIDDEN, js=open_tab_js())
        demo.load(None, None, None, api_name=HIDDEN, js=metric_help_js(res))
    return demo


def open_tab_js() -> str:
    """JavaScript run on page load: select the tab named by ``?tab=`` (or Browse when only
    ``?id=`` is given) once the page has mounted (``fs.openTab`` in static/page.js)."""
    return f"() => window.fs?.openTab({json.dumps({t.id: t.label for t in TABS})}) ?? []"


def metric_help_js(res: D.Results) -> str:
    """JavaScript run on page load: every metric column's tooltip, from the metric table of
    leaderboard_rows.json (its definition)."""
    cols = res.rows.get("columns") or []
    return (
        f"() => window.fs?.addHelp({json.dumps({c['short']: c['definition'] for c in cols})}) ?? []"
    )


def subtitle(res: D.Results) -> str:
    """The line under the title: dataset, counts, last update, where the results come from,
    downloads and links."""
    rep = res.report
    gt = rep["ground_truth"]
    parts = [
        f"Dataset `{rep['dataset_version']}` · {gt['steps']} scored test steps in "
        f"{gt['trajectories']} trajectories · {len(rep['judges'])} judges ranked",
        f"last updated {str(rep.get('generated_at') or 'unknown')[:10]}",
        f"results from {res.origin}",
    ]
    downloads = [
        f"[{name}](/gradio_api/file={res.root / name})"
        for name in ("leaderboard.csv", "leaderboard.json")
        if (res.root / name).is_file()
    ]
    if downloads:
        parts.append("download " + ", ".join(downloads))
    links = {**(rep.get("links") or {}), **D.link_overrides()}
    for key, label in (
        ("repository", "repository"),
        ("judges_toml", "judges.toml"),
        ("pull_requests", "pull requests"),
    ):
        if links.get(key):
            parts.append(f"[{label}]({links[key]})")
    dataset = os.environ.get(D.DATASET_ENV, "").strip()
    if dataset:
        parts.append(f"[dataset](https://huggingface.co/datasets/{dataset})")
    return " · ".join(parts)


def create(
    results: Path | None = None, build_dir: Path | None = None
) -> tuple[gr.Blocks, Path | None]:
    """(app, results folder) from a results folder (or $FORESIGHT_RESULTS_REPO) and a build
    folder (or $FORESIGHT_DATASET_REPO)."""
    try:
        root, origin = D.results_root(results)
        res = D.load_results(root, origin)
    except D.SpaceDataError as e:
        log.warning("%s", e)
        return build(None, D.Texts.missing(""), str(e)), None
    texts = D.load_texts(build_dir, version=str(res.report["dataset_version"]))
    return build(res, texts), root


def main(argv: list[str] | None = None) -> int:
    """Launch the app (blocks until interrupted)."""
    ap = argparse.ArgumentParser(
        prog="space/app.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--results", type=Path, default=None, help="folder leaderboard.py wrote")
    ap.add_argument("--build", type=Path, default=None, help="data/build folder (text for Browse)")
    ap.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    demo, root = create(args.results, args.build)
    demo.launch(
        server_name=args.host,
        server_port=args.port,
        css=CSS,
        theme=THEME,
        head=HEAD,
        allowed_paths=[str(root)] if root else None,
        footer_links=["api", "gradio"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
