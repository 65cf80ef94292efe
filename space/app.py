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
import logging
import os
import sys
from collections.abc import Sequence
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
.fs-muted {color: var(--body-text-color-subdued);}
.fs-raw summary {cursor: pointer; font-weight: 600;}
"""

THEME = gr.themes.Default(
    font=["system-ui", "Segoe UI", "Helvetica", "Arial", "sans-serif"],
    font_mono=["ui-monospace", "Menlo", "Consolas", "monospace"],
)
"""System fonts: nothing fetched from a font CDN (the page also works offline)."""

LEADERBOARD_WIDTHS: list[str | int] = [
    "4%",
    "13%",
    "6%",
    "4%",
    "11%",
    "11%",
    "11%",
    "11%",
    "14%",
    "5%",
    "5%",
    "5%",
]
"""Main-table columns (rank, judge, backend, open, 4 metrics with CI, vs shortcuts, 2 plain,
p50): they add up to the page width, so nothing is cut off at 1366 px."""

HIDDEN: Any = False
"""``api_name`` of events that are not API endpoints: gradio 6 registers them as private (its
type hints say ``str | None``, its code takes False)."""

# --------------------------------------------------------------------------- callbacks


def _df(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(str) if not df.empty else df


def _table(value: pd.DataFrame, **kw: Any) -> gr.Dataframe:
    """A read-only, wrapping table in the page's table style."""
    return gr.Dataframe(value=value, interactive=False, wrap=True, elem_classes="fs-table", **kw)


def make_callbacks(res: D.Results, texts: D.Texts) -> dict[str, Any]:
    """The app's callbacks over one results folder and one text source (pure readers)."""

    def leaderboard(
        metric: str,
        search: str,
        source: str,
        category: str,
        backend: Sequence[str] | None,
        open_weights: str,
        fitted: str,
    ) -> tuple[pd.DataFrame, str]:
        df, note = T.leaderboard_table(
            res,
            metric=metric,
            search=search,
            source=source,
            category=category,
            backend=backend or [],
            open_weights=open_weights or "Any",
            fitted=fitted or "Any",
        )
        return _df(df), note

    def trajectories(search: str) -> pd.DataFrame:
        return _df(T.trajectory_table(res, search))

    def robustness(family: str) -> tuple[pd.DataFrame, str]:
        df, note = T.robustness_table(res, family)
        return _df(df), note

    def compare(a: str, b: str) -> tuple[str, pd.DataFrame, str, pd.DataFrame]:
        if not a or not b:
            empty = pd.DataFrame()
            return "Pick two judges.", empty, "", empty
        table, summary = T.compare_table(res, a, b)
        dis, note = T.disagreements(res, a, b) if a != b else (pd.DataFrame(), "")
        return summary, _df(table), note, _df(dis)

    def browse_list(source: str, act: str, search: str) -> tuple[Any, str]:
        ids, note = T.browse_ids(res, texts, source=source, act=act, search=search)
        return gr.Dropdown(choices=ids, value=ids[0] if ids else None), note

    def browse(did: str) -> tuple[str, pd.DataFrame, str]:
        if not did:
            return "<p class='fs-muted'>Pick a decision point.</p>", pd.DataFrame(), ""
        did = did.strip()
        return (
            V.point_html(res, texts, did),
            _df(T.verdict_table(res, did)),
            V.raw_html(res, texts, did),
        )

    return {
        "leaderboard": leaderboard,
        "trajectories": trajectories,
        "robustness": robustness,
        "compare": compare,
        "browse_list": browse_list,
        "browse": browse,
    }


# --------------------------------------------------------------------------- layout


def _leaderboard_tab(res: D.Results, cb: dict[str, Any]) -> None:
    rep = res.report
    with gr.Tab("Leaderboard", id="leaderboard"):
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
                choices=[D.ALL, *T.sources(rep)],
                value=D.ALL,
                label="Source",
                scale=1,
                min_width=130,
            )
            category = gr.Dropdown(
                choices=[D.ALL, *T.categories(rep)],
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
                choices=list(T.OPEN_CHOICES),
                value="Any",
                label="Open weights",
                scale=1,
                min_width=120,
            )
            fitted = gr.Dropdown(
                choices=list(T.FITTED_CHOICES),
                value="Any",
                label="Fitted on dev",
                scale=1,
                min_width=150,
            )
        df0, note0 = cb["leaderboard"](
            rep["settings"]["rank_metric"], "", D.ALL, D.ALL, [], "Any", "Any"
        )
        note = gr.Markdown(note0)
        table = _table(
            df0,
            max_height=560,
            elem_id="leaderboard-table",
            column_widths=LEADERBOARD_WIDTHS,
            show_label=False,
        )
        gr.Markdown(T.pending_markdown(rep), elem_id="pending")
        inputs: list[gr.Dropdown | gr.Textbox] = [
            metric,
            search,
            source,
            category,
            backend,
            open_w,
            fitted,
        ]
        for comp in inputs:
            comp.change(
                cb["leaderboard"],
                inputs,
                [table, note],
                api_name="leaderboard" if comp is metric else HIDDEN,
                show_progress="hidden",
            )
        source.input(
            lambda s: D.ALL if s != D.ALL else gr.update(),
            source,
            category,
            api_name=HIDDEN,
        )
        category.input(
            lambda c: D.ALL if c != D.ALL else gr.update(),
            category,
            source,
            api_name=HIDDEN,
        )


def _trajectories_tab(res: D.Results, cb: dict[str, Any]) -> None:
    with gr.Tab("Trajectories", id="trajectories"):
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
            gr.Image(
                res.plot("trajectory_outcomes"),
                label="Trajectory outcomes",
                type="filepath",
                interactive=False,
                buttons=["fullscreen"],
            )


def _validity_tab(res: D.Results) -> None:
    """Shortcut probes, the twin pairs and the diagnostic configs: what the headline is not."""
    with gr.Tab("Validity", id="validity"):
        gr.Markdown(
            "### Shortcut probes\nEach probe sees **one artefact** of a decision point (the "
            "called tool's name, the step's position, the thought, the action text) and is "
            "fitted on dev. They are never ranked: the best of them on each source is the "
            "reference line on the Leaderboard tab, and a judge that does not clear it is not "
            "shown to measure judgment."
        )
        _table(T.probe_table(res), elem_id="probe-table", show_label=False)
        tdf, tnote = T.twin_table(res)
        gr.Markdown("### Hard pairs: StepShield twins\n" + tnote)
        _table(tdf, elem_id="twin-table", show_label=False)
        ddf, dnote = T.diagnostic_table(res)
        gr.Markdown("### Diagnostic configs\n" + dnote)
        _table(ddf, elem_id="diagnostic-table", show_label=False)
        if res.plot("shortcuts"):
            gr.Image(
                res.plot("shortcuts"),
                label="Balanced accuracy against the best probe",
                type="filepath",
                interactive=False,
                buttons=["fullscreen", "download"],
            )


def _robustness_tab(res: D.Results, cb: dict[str, Any]) -> None:
    with gr.Tab("Robustness", id="robustness"):
        fam = gr.Dropdown(
            choices=[D.ALL, *T.stress_families(res.report)], value=D.ALL, label="Stress family"
        )
        df0, note0 = cb["robustness"](D.ALL)
        note = gr.Markdown(note0)
        table = _table(df0, elem_id="robustness-table", show_label=False)
        fam.change(cb["robustness"], fam, [table, note], api_name="robustness")


def _plots_tab(res: D.Results) -> None:
    with gr.Tab("Plots", id="plots"):
        with gr.Row():
            for key, label in (
                ("roc", "ROC curves"),
                ("reliability", "Reliability diagrams"),
            ):
                gr.Image(
                    res.plot(key),
                    label=label,
                    type="filepath",
                    interactive=False,
                    min_width=420,
                    buttons=["fullscreen", "download"],
                )
        with gr.Row():
            gr.Image(
                res.plot("accuracy_latency"),
                label="Balanced accuracy against p50 latency",
                type="filepath",
                interactive=False,
                min_width=420,
                buttons=["fullscreen", "download"],
            )
            gr.Markdown(
                "**ROC**: true-positive rate against false-positive rate as the risk "
                "threshold moves (judges without risk scores use CONTINUE = 0, ASK = 50, "
                "STOP = 100). **Reliability**: observed share of unsafe steps per bin of "
                "predicted risk; the diagonal is perfect calibration. **Latency**: "
                "median seconds per decision (warm-up calls excluded) on the hardware in "
                "the predictions file, so compare like with like."
            )


def _compare_tab(res: D.Results, cb: dict[str, Any]) -> gr.Dataframe:
    """The Compare tab; returns its disagreement table (a row opens in Browse)."""
    judges = T.judge_choices(res.report)
    with gr.Tab("Compare", id="compare"):
        with gr.Row(equal_height=True):
            ja = gr.Dropdown(
                choices=judges, value=judges[0][1] if judges else None, label="Judge A"
            )
            jb = gr.Dropdown(
                choices=judges,
                value=judges[1][1] if len(judges) > 1 else None,
                label="Judge B",
            )
        c0 = cb["compare"](ja.value, jb.value)
        csummary = gr.Markdown(c0[0])
        ctable = _table(
            c0[1],
            elem_id="compare-table",
            show_label=False,
        )
        cnote = gr.Markdown(c0[2])
        cdis = _table(
            c0[3],
            max_height=400,
            label="Where they disagree (click a row to open it in Browse)",
            elem_id="disagree-table",
        )
        for comp in (ja, jb):
            comp.change(
                cb["compare"],
                [ja, jb],
                [csummary, ctable, cnote, cdis],
                api_name="compare" if comp is ja else HIDDEN,
            )
    return cdis


def _browse_tab(res: D.Results, texts: D.Texts, cb: dict[str, Any]) -> gr.Dropdown:
    """The Browse tab; returns its decision-point selector."""
    rep = res.report
    with gr.Tab("Browse", id="browse"):
        gr.Markdown(texts.origin, elem_id="text-origin")
        ids0, bnote0 = T.browse_ids(res, texts)
        with gr.Row(equal_height=True):
            bsource = gr.Dropdown(
                choices=[D.ALL, *T.sources(rep)], value=D.ALL, label="Source", scale=1
            )
            bact = gr.Dropdown(choices=list(T.ACT_CHOICES), value="Any", label="Gold act", scale=1)
            bsearch = gr.Textbox(label="Id contains", scale=1)
            bid = gr.Dropdown(
                choices=ids0,
                value=ids0[0] if ids0 else None,
                label="Decision point",
                allow_custom_value=True,
                scale=2,
            )
        bnote = gr.Markdown(bnote0)
        b0 = cb["browse"](ids0[0] if ids0 else "")
        bpoint = gr.HTML(b0[0], elem_id="point")
        gr.Markdown("### Every judge's verdict")
        bverdicts = _table(
            b0[1],
            show_label=False,
        )
        with gr.Accordion("Raw outputs", open=False):
            braw = gr.HTML(b0[2])
        for comp in (bsource, bact, bsearch):
            comp.change(
                cb["browse_list"],
                [bsource, bact, bsearch],
                [bid, bnote],
                api_name="browse_list" if comp is bsource else HIDDEN,
            )
        bid.change(cb["browse"], bid, [bpoint, bverdicts, braw], api_name="browse")
    return bid


def _about_tabs(res: D.Results, texts: D.Texts) -> None:
    with gr.Tab("Submit", id="submit"):
        gr.Markdown(about.SUBMIT_MD)
    with gr.Tab("About", id="about"):
        gr.Markdown(about.about_md(res))
        card = about.dataset_card(texts)
        with gr.Accordion("Dataset card", open=False):
            gr.Markdown(
                card
                or "The dataset card is written by `python bench/build.py` into the built "
                "dataset; none is available here. "
                + texts.origin
            )


def build(res: D.Results | None, texts: D.Texts, problem: str = "") -> gr.Blocks:
    """The Blocks app. With no results, a page that says how to produce them."""
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
        cb = make_callbacks(res, texts)
        rep = res.report
        gt = rep["ground_truth"]
        gr.Markdown(
            f"Dataset `{rep['dataset_version']}` · {gt['steps']} scored test steps in "
            f"{gt['trajectories']} trajectories · {len(rep['judges'])} judges ranked · results "
            f"from {res.origin}",
            elem_id="subtitle",
        )
        with gr.Tabs() as tabs:
            _leaderboard_tab(res, cb)
            _trajectories_tab(res, cb)
            _validity_tab(res)
            _robustness_tab(res, cb)
            _plots_tab(res)
            cdis = _compare_tab(res, cb)
            bid = _browse_tab(res, texts, cb)
            _about_tabs(res, texts)

        def open_in_browse(evt: gr.SelectData, dis: pd.DataFrame) -> tuple[Any, Any]:
            row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
            did = str(dis.iloc[row, 0])
            return gr.Dropdown(value=did), gr.Tabs(selected="browse")

        cdis.select(open_in_browse, cdis, [bid, tabs], api_name=HIDDEN)
    return demo


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
        allowed_paths=[str(root)] if root else None,
        footer_links=["api", "gradio"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
