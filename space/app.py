"""Foresight Bench leaderboard: a Gradio app over the outputs of ``bench/leaderboard.py``.

    python space/app.py                       # leaderboards/ and data/build/ of this checkout
    python space/app.py --results DIR --build DIR --host 127.0.0.1 --port 7860

Host and port also come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (what Hugging Face Spaces
set). FORESIGHT_RESULTS_REPO names a Hub dataset holding the results instead of leaderboards/;
FORESIGHT_DATASET_REPO names the published benchmark dataset for Browse's text. No scoring
happens here: every number is read from leaderboard.json (docs/space.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python space/app.py` or a Space: data.py sits beside this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import gradio as gr  # noqa: E402
import pandas as pd  # noqa: E402

import data as D  # noqa: E402

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

LEADERBOARD_WIDTHS = ["5%", "14%", "7%", "5%", "13%", "13%", "13%", "13%", "6%", "6%", "5%"]
"""Main-table columns (rank, judge, backend, open, 4 metrics with CI, 2 plain, p50): they add
up to the page width, so nothing is cut off at 1366 px."""

DEFINITIONS: Mapping[str, str] = {
    "balanced_accuracy": "(recall + specificity) / 2, UNSAFE the positive class",
    "auroc": "P(risk of a gold-UNSAFE step > risk of a gold-SAFE step), ties 1/2",
    "f1": "2TP / (2TP + FP + FN)",
    "precision": "TP / (TP + FP)",
    "recall": "TP / (TP + FN)",
    "specificity": "TN / (TN + FP)",
    "miss_rate": "FN / (TP + FN): unsafe steps let through",
    "false_alarm_rate": "FP / (TN + FP): safe steps blocked or questioned",
    "false_ask_rate": "P(predicted ASK | gold CONTINUE)",
    "reward": "mean of the reward matrix R[gold act][predicted act] (below)",
    "parse_rate": "(ok + partial) / (n − error): verdicts the parser could read",
    "invalid_rate": "unparseable verdicts / n (scored as the invalid-verdict policy)",
    "error_rate": "backend failures after retries / n",
    "ece": "expected calibration error of risk/100 over equal-width bins",
    "brier": "mean of (risk/100 − [gold UNSAFE])²",
    "caught": "unsafe trajectories whose first flag is at or before the onset",
    "exact": "first flag exactly at the onset step",
    "early": "first flag before the onset step",
    "late": "first flag after the onset step",
    "missed": "unsafe trajectories never flagged",
    "safe_interrupted": "safe trajectories with any flag",
    "traj_f1": "F1 with a trajectory flagged when any step is",
    "traj_recall": "flagged unsafe trajectories / unsafe trajectories",
    "traj_specificity": "1 − safe interrupted",
}
"""One line per metric for the About tab; docs/metrics.md has the full definitions."""

SUBMIT_MD = """
## Add a judge

1. **One row in `judges.toml`.** Copy a row of the same backend and change what differs:

   ```toml
   [[judge]]
   id = "my-judge-7b"                 # stable lower-case slug: names its predictions folder
   display_name = "My Judge 7B"
   backend = "transformers"           # baseline, sklearn, embedding, openai, transformers,
                                      # vllm, hf-inference or python
   model = "my-org/my-judge-7b"
   revision = "<commit sha>"          # pin the weights
   prompt = "auditor"                 # auditor, rjudge, json, llamaguard
   parser = "boxed"                   # boxed, rjudge, json, llamaguard
   open_weights = true
   license = "apache-2.0"
   submitted_by = "your GitHub handle"
   ```

   Secrets never go in the file: an API judge names the environment variable that holds its key
   (`params.api_key_env`).
2. **Validate it:** `python bench/decide.py --check` checks every row (unknown keys, backend
   parameters, prompt and parser names) without running anything.
3. **Open a pull request** with the row (and, if you ran it yourself, its predictions file under
   `leaderboards/predictions/<id>/<dataset version>/`).

## What maintainers run

```bash
python bench/decide.py --check                 # the row is valid
python bench/decide.py --judge my-judge-7b     # predictions for the current dataset version
python bench/leaderboard.py                    # tables, leaderboard.json, plots
python bench/leaderboard.py --check            # CI: the committed tables match the inputs
```

## How results reach this table

`bench/decide.py` appends one line per decision point to
`leaderboards/predictions/<judge>/<dataset version>/<config hash>.jsonl`; `bench/leaderboard.py`
scores every judge against `leaderboards/ground_truth.jsonl` and writes `leaderboard.json`, which
this Space reads (from the repository's `leaderboards/` or the results dataset named by
`FORESIGHT_RESULTS_REPO`). A judge in `judges.toml` without predictions for the current dataset
version is listed under *Not yet evaluated*; predictions made for another dataset version are
refused, never mixed; a file missing some decision points is listed as incomplete and not ranked.
"""

CITE_MD = """
## How to cite

```bibtex
@misc{foresightbench,
  title  = {Foresight Bench: step-level safety judges for agent actions before they execute},
  author = {{Foresight Bench contributors}},
  year   = {2026},
  note   = {Dataset version %(version)s}
}
```

Please also cite the sources whose trajectories you use: R-Judge (Yuan et al., *R-Judge:
Benchmarking Safety Risk Awareness for LLM Agents*, github.com/Lordog/R-Judge), StepShield
(github.com/glo26/stepshield-review) and ASSEBench (from AgentAuditor,
github.com/Astarojth/AgentAuditor-ASSEBench).
"""


# --------------------------------------------------------------------------- callbacks


def _df(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(str) if not df.empty else df


def make_callbacks(res: D.Results, texts: D.Texts) -> dict[str, Any]:
    """The app's callbacks over one results folder and one text source (pure readers)."""

    def leaderboard(
        metric: str,
        search: str,
        source: str,
        category: str,
        backend: Sequence[str] | None,
        open_weights: str,
    ) -> tuple[pd.DataFrame, str]:
        df, note = D.leaderboard_table(
            res,
            metric=metric,
            search=search,
            source=source,
            category=category,
            backend=backend or [],
            open_weights=open_weights or "Any",
        )
        return _df(df), note

    def trajectories(search: str) -> pd.DataFrame:
        return _df(D.trajectory_table(res, search))

    def compare(a: str, b: str) -> tuple[str, pd.DataFrame, str, pd.DataFrame]:
        if not a or not b:
            empty = pd.DataFrame()
            return "Pick two judges.", empty, "", empty
        table, summary = D.compare_table(res, a, b)
        dis, note = D.disagreements(res, a, b) if a != b else (pd.DataFrame(), "")
        return summary, _df(table), note, _df(dis)

    def browse_list(source: str, act: str, search: str) -> tuple[Any, str]:
        ids, note = D.browse_ids(res, texts, source=source, act=act, search=search)
        return gr.Dropdown(choices=ids, value=ids[0] if ids else None), note

    def browse(did: str) -> tuple[str, pd.DataFrame, str]:
        if not did:
            return "<p class='fs-muted'>Pick a decision point.</p>", pd.DataFrame(), ""
        did = did.strip()
        return D.point_html(res, texts, did), _df(D.verdict_table(res, did)), D.raw_html(res, did)

    return {
        "leaderboard": leaderboard,
        "trajectories": trajectories,
        "compare": compare,
        "browse_list": browse_list,
        "browse": browse,
    }


# --------------------------------------------------------------------------- layout


def _plot(res: D.Results, key: str) -> str | None:
    rel = res.report.get("plots", {}).get(key)
    p = res.root / rel if rel else None
    return str(p) if p and p.is_file() else None


def _about_md(res: D.Results, texts: D.Texts) -> str:
    rep = res.report
    gt, st = rep["ground_truth"], rep["settings"]
    lines = [
        "## Metrics",
        f"UNSAFE is the positive class: gold act CONTINUE is SAFE, ASK and STOP are UNSAFE; a "
        f"predicted ASK counts as UNSAFE when its risk is ≥ {st['ask_unsafe_at']} or missing. "
        f"Invalid or failed verdicts are scored as **{st['invalid_policy']}** (fail-open) and "
        "counted in their own columns. Step-level metrics use scored, non-disputed test steps; "
        "trajectory metrics assume a deployed judge halts at its first UNSAFE verdict. 95% "
        f"intervals: {st['resamples']} bootstrap resamples of trajectories (seed {st['seed']}), "
        "the same draws for every judge, so differences are paired; judges whose difference "
        "from a tie group's leader is not significant share its rank. Full definitions: "
        "`docs/metrics.md` in the repository.",
        "",
        "| Metric | Better | Definition |",
        "|---|---|---|",
    ]
    for m in rep["metrics"]:
        lines.append(
            f"| {D.md_escape(m['label'])} | {'higher' if m['higher_is_better'] else 'lower'} | "
            f"{D.md_escape(DEFINITIONS.get(m['name'], ''))} |"
        )
    cm = st.get("cost_matrix", {})
    if cm:
        acts = list(cm)
        lines += ["", "Reward matrix (rows gold act, columns predicted act):", ""]
        lines.append("| gold \\ predicted | " + " | ".join(acts) + " |")
        lines.append("|---|" + "---|" * len(acts))
        lines += [f"| {g} | " + " | ".join(f"{cm[g][p]:+g}" for p in acts) + " |" for g in acts]
    lines += [
        "",
        "## Dataset",
        f"Version `{rep['dataset_version']}`: {gt['steps']} scored test steps "
        f"({gt['unsafe_steps']} unsafe) in {gt['trajectories']} trajectories "
        f"({gt['unsafe_trajectories']} unsafe); {gt['disputed_excluded']} disputed rows excluded. "
        f"Sources: {', '.join(gt['sources'])}.",
        "",
        "## Licences",
        "| Source | Licence | Redistributed |",
        "|---|---|---|",
    ]
    for name, c in sorted((res.meta.get("configs") or {}).items()):
        redis = c.get("redistributable")
        lines.append(
            f"| {D.md_escape(name)} | {D.md_escape(str(c.get('license') or 'none'))} | "
            f"{'yes' if redis else 'no: local evaluation only' if redis is False else '–'} |"
        )
    lines += [
        "",
        "The repository holds ids, labels, predictions and tables only; trajectory text lives in "
        "the built dataset. R-Judge declares no licence, so its text is never published or shown "
        "on the Hub; its ids and labels are scored like the others.",
    ]
    return "\n".join(lines) + "\n" + CITE_MD % {"version": rep["dataset_version"]}


def _card(texts: D.Texts) -> str:
    card = texts.card
    if card.startswith("---"):
        end = card.find("\n---", 3)
        card = card[end + 4 :] if end > 0 else card
    return card.strip()


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
                gr.Markdown(SUBMIT_MD)
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
        judges = D.judge_choices(rep)
        with gr.Tabs() as tabs:
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
                        choices=D.metric_choices(rep),
                        value=rep["settings"]["rank_metric"],
                        label="Rank by",
                        scale=1,
                        min_width=130,
                    )
                    source = gr.Dropdown(
                        choices=[D.ALL, *D.sources(rep)],
                        value=D.ALL,
                        label="Source",
                        scale=1,
                        min_width=130,
                    )
                    category = gr.Dropdown(
                        choices=[D.ALL, *D.categories(rep)],
                        value=D.ALL,
                        label="Category",
                        scale=1,
                        min_width=130,
                    )
                    backend = gr.Dropdown(
                        choices=D.backends(rep),
                        value=[],
                        multiselect=True,
                        label="Backend (empty: all)",
                        scale=1,
                        min_width=150,
                    )
                    open_w = gr.Dropdown(
                        choices=list(D.OPEN_CHOICES),
                        value="Any",
                        label="Open weights",
                        scale=1,
                        min_width=120,
                    )
                df0, note0 = cb["leaderboard"](
                    rep["settings"]["rank_metric"], "", D.ALL, D.ALL, [], "Any"
                )
                note = gr.Markdown(note0)
                table = gr.Dataframe(
                    value=df0,
                    interactive=False,
                    wrap=True,
                    max_height=560,
                    elem_id="leaderboard-table",
                    column_widths=LEADERBOARD_WIDTHS,
                    elem_classes="fs-table",
                    show_label=False,
                )
                gr.Markdown(D.pending_markdown(rep), elem_id="pending")
                inputs = [metric, search, source, category, backend, open_w]
                for comp in inputs:
                    comp.change(
                        cb["leaderboard"],
                        inputs,
                        [table, note],
                        api_name="leaderboard" if comp is metric else False,
                        show_progress="hidden",
                    )
                source.input(
                    lambda s: D.ALL if s != D.ALL else gr.update(), source, category, api_name=False
                )
                category.input(
                    lambda c: D.ALL if c != D.ALL else gr.update(), category, source, api_name=False
                )

            with gr.Tab("Trajectories", id="trajectories"):
                gr.Markdown(
                    "A deployed judge halts a trajectory at its first UNSAFE verdict. For unsafe "
                    "trajectories: **caught** = first flag at or before the onset (at onset + "
                    "early), **late** = after it, **missed** = never. **Safe interrupted** = safe "
                    "trajectories with any flag."
                )
                tsearch = gr.Textbox(label="Search judges", placeholder="name or id")
                ttable = gr.Dataframe(
                    value=cb["trajectories"](""),
                    interactive=False,
                    wrap=True,
                    elem_id="traj-table",
                    elem_classes="fs-table",
                    show_label=False,
                )
                tsearch.change(cb["trajectories"], tsearch, ttable, api_name="trajectories")
                if _plot(res, "trajectory_outcomes"):
                    gr.Image(
                        _plot(res, "trajectory_outcomes"),
                        label="Trajectory outcomes",
                        type="filepath",
                        interactive=False,
                        buttons=["fullscreen"],
                    )

            with gr.Tab("Plots", id="plots"):
                with gr.Row():
                    for key, label in (
                        ("roc", "ROC curves"),
                        ("reliability", "Reliability diagrams"),
                    ):
                        gr.Image(
                            _plot(res, key),
                            label=label,
                            type="filepath",
                            interactive=False,
                            min_width=420,
                            buttons=["fullscreen", "download"],
                        )
                with gr.Row():
                    gr.Image(
                        _plot(res, "accuracy_latency"),
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
                ctable = gr.Dataframe(
                    value=c0[1],
                    interactive=False,
                    wrap=True,
                    elem_id="compare-table",
                    elem_classes="fs-table",
                    show_label=False,
                )
                cnote = gr.Markdown(c0[2])
                cdis = gr.Dataframe(
                    value=c0[3],
                    interactive=False,
                    wrap=True,
                    max_height=400,
                    label="Where they disagree (click a row to open it in Browse)",
                    elem_id="disagree-table",
                    elem_classes="fs-table",
                )
                for comp in (ja, jb):
                    comp.change(
                        cb["compare"],
                        [ja, jb],
                        [csummary, ctable, cnote, cdis],
                        api_name="compare" if comp is ja else False,
                    )

            with gr.Tab("Browse", id="browse"):
                gr.Markdown(texts.origin, elem_id="text-origin")
                ids0, bnote0 = D.browse_ids(res, texts)
                with gr.Row(equal_height=True):
                    bsource = gr.Dropdown(
                        choices=[D.ALL, *D.sources(rep)], value=D.ALL, label="Source", scale=1
                    )
                    bact = gr.Dropdown(
                        choices=list(D.ACT_CHOICES), value="Any", label="Gold act", scale=1
                    )
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
                bverdicts = gr.Dataframe(
                    value=b0[1],
                    interactive=False,
                    wrap=True,
                    show_label=False,
                    elem_classes="fs-table",
                )
                with gr.Accordion("Raw outputs", open=False):
                    braw = gr.HTML(b0[2])
                for comp in (bsource, bact, bsearch):
                    comp.change(
                        cb["browse_list"],
                        [bsource, bact, bsearch],
                        [bid, bnote],
                        api_name="browse_list" if comp is bsource else False,
                    )
                bid.change(cb["browse"], bid, [bpoint, bverdicts, braw], api_name="browse")

                def open_in_browse(evt: gr.SelectData, dis: pd.DataFrame) -> tuple[Any, Any]:
                    row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
                    did = str(dis.iloc[row, 0])
                    return gr.Dropdown(value=did), gr.Tabs(selected="browse")

                cdis.select(open_in_browse, cdis, [bid, tabs], api_name=False)

            with gr.Tab("Submit", id="submit"):
                gr.Markdown(SUBMIT_MD)

            with gr.Tab("About", id="about"):
                gr.Markdown(_about_md(res, texts))
                card = _card(texts)
                with gr.Accordion("Dataset card", open=False):
                    gr.Markdown(
                        card
                        or "The dataset card is written by `python bench/build.py` into the built "
                        "dataset; none is available here. "
                        + texts.origin
                    )
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
        return build(None, D.Texts(origin="", path=None, version=None), str(e)), None
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
