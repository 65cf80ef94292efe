"""What the Space reads, and the tables it shows: outputs of ``bench/leaderboard.py`` plus the
built dataset's text. Nothing here scores: every number comes from ``leaderboard.json``; the
per-decision verdicts and raw outputs come from the predictions files it names, the gold labels
from ``ground_truth.jsonl``, the text from the built dataset's ``decision_points.jsonl``.

Where the results come from: ``leaderboards/`` beside this folder, or, when the environment
variable ``FORESIGHT_RESULTS_REPO`` names a Hub dataset, that dataset (same layout as
``leaderboards/``), downloaded with ``huggingface_hub.snapshot_download``.

Where the text comes from: ``data/build/<version>/`` beside this folder (``bench/build.py``), or,
when ``FORESIGHT_DATASET_REPO`` names a Hub dataset (the one ``build.py --push-to-hub`` wrote),
that dataset. A source the build manifest marks as not redistributable (R-Judge) is shown only
from a local build whose raw data is present on this machine, never on the Hub.

This module runs on the Hub from the ``space/`` folder alone, so it needs only the standard
library, pandas and huggingface_hub; ``bench`` is used when it is importable (a checkout).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

log = logging.getLogger(__name__)

RESULTS_ENV = "FORESIGHT_RESULTS_REPO"
"""Names the Hub dataset holding the leaderboard outputs (layout of ``leaderboards/``)."""
DATASET_ENV = "FORESIGHT_DATASET_REPO"
"""Names the Hub dataset holding the built benchmark (for the text in Browse)."""
RESULT_FILES = [
    f"{pre}{name}"
    for pre in ("", "leaderboards/")
    for name in ("*.json", "*.jsonl", "*.csv", "plots/*.png", "predictions/**", "reviews/*.jsonl")
]
"""What the Space downloads from the results dataset (not the job wheels and plans)."""
SCHEMA = "foresight-leaderboard/1"
"""The leaderboard.json layout this Space reads (docs/metrics.md)."""

SPACE_DIR = Path(__file__).resolve().parent
REPO_ROOT = SPACE_DIR.parent
DEFAULT_RESULTS = REPO_ROOT / "leaderboards"
DEFAULT_BUILD = REPO_ROOT / "data" / "build"
DEFAULT_REVIEWS = REPO_ROOT / "data" / "reviews"
POINTS_FILE = "decision_points.jsonl"

HEADLINE = ("balanced_accuracy", "auroc", "reward", "caught")
"""Metrics shown with their intervals in the main table (after the ranking metric)."""
PLAIN = ("safe_interrupted", "parse_rate", "f1")
"""Metrics shown as point values in the main table."""
ALL = "All"
"""The 'no filter' choice of the source and category filters."""
OpenWeights = Literal["Any", "Open", "Closed", "Unstated"]
OPEN_CHOICES: tuple[OpenWeights, ...] = ("Any", "Open", "Closed", "Unstated")
ACT_CHOICES = ("Any", "CONTINUE", "ASK", "STOP")
BROWSE_LIMIT = 2000
"""Most decision points offered in Browse's dropdown at once (filters narrow the list)."""
DISAGREE_LIMIT = 500
"""Most disagreeing decision points listed in Compare."""


class SpaceDataError(Exception):
    """Results cannot be read; the message says what to run."""


def on_hub() -> bool:
    """True when running as a Hugging Face Space (the platform sets SPACE_ID)."""
    return bool(os.environ.get("SPACE_ID"))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Results:
    """The leaderboard outputs, read."""

    root: Path
    """Folder holding leaderboard.json, plots/, predictions/, ground_truth.jsonl."""
    origin: str
    """Where they came from, for the page ('local folder …' or 'Hub dataset …')."""
    report: Mapping[str, Any]
    """leaderboard.json."""
    ground_truth: Mapping[str, Mapping[str, Any]]
    """Decision point id -> ground-truth row (ids and labels only); {} when absent."""
    meta: Mapping[str, Any]
    """ground_truth.meta.json; {} when absent."""
    reviews_dir: Path | None
    """Folder of reviews/<reviewer>.jsonl (rationales), when present."""
    _verdicts: dict[str, JudgeVerdicts] = field(default_factory=dict, repr=False, compare=False)
    """Cache: judge id -> its predictions, read on first use."""

    @property
    def judges(self) -> list[Mapping[str, Any]]:
        """Ranked judges in table order."""
        return list(self.report["judges"])

    def judge(self, jid: str) -> Mapping[str, Any]:
        """One ranked judge's entry; SpaceDataError when unknown."""
        for e in self.report["judges"]:
            if e["id"] == jid:
                return e
        raise SpaceDataError(f"judge {jid!r} is not on the leaderboard")

    def verdicts(self, jid: str) -> JudgeVerdicts:
        """A ranked judge's predictions (last decision line per id), read once."""
        if jid not in self._verdicts:
            rel = self.judge(jid)["predictions"]
            self._verdicts[jid] = JudgeVerdicts.read(self.root / "predictions" / rel)
        return self._verdicts[jid]

    def label(self, metric: str) -> str:
        """A metric's display label."""
        for m in self.report["metrics"]:
            if m["name"] == metric:
                return str(m["label"])
        return metric

    def higher_is_better(self, metric: str) -> bool:
        """Whether a larger value of ``metric`` is better (from the JSON)."""
        for m in self.report["metrics"]:
            if m["name"] == metric:
                return bool(m["higher_is_better"])
        raise SpaceDataError(f"unknown metric {metric!r}")


def results_root(local: Path | None = None) -> tuple[Path, str]:
    """(folder, description): the Hub dataset named by $FORESIGHT_RESULTS_REPO when set (always
    wins, so a deployed Space never reads a stale copy), else ``local``, else leaderboards/."""
    repo = os.environ.get(RESULTS_ENV, "").strip()
    if repo:
        from huggingface_hub import snapshot_download

        try:
            path = Path(
                snapshot_download(repo_id=repo, repo_type="dataset", allow_patterns=RESULT_FILES)
            )
        except Exception as e:  # noqa: BLE001 - any hub failure gets the same advice
            raise SpaceDataError(
                f"cannot download the results dataset {repo!r} named by {RESULTS_ENV}: {e}; "
                f"check the name and HF_TOKEN, or unset {RESULTS_ENV} to read leaderboards/"
            ) from e
        if not (path / "leaderboard.json").is_file() and (path / "leaderboards").is_dir():
            path = path / "leaderboards"
        return path, f"Hub dataset `{repo}`"
    path = Path(local) if local else DEFAULT_RESULTS
    return path, f"local folder `{path}`"


def load_results(root: Path, origin: str = "", reviews_dir: Path | None = None) -> Results:
    """Read leaderboard.json (+ ground truth and meta when present). SpaceDataError says how to
    produce them when leaderboard.json is missing or of another schema."""
    path = root / "leaderboard.json"
    if not path.is_file():
        raise SpaceDataError(
            f"no leaderboard at {path}: run `python bench/leaderboard.py` (it needs "
            "leaderboards/ground_truth.jsonl from `python bench/build.py` and predictions from "
            "`python bench/decide.py`), or pass --results"
        )
    report = json.loads(path.read_text(encoding="utf-8"))
    if report.get("schema") != SCHEMA:
        raise SpaceDataError(
            f"{path} has schema {report.get('schema')!r}, this Space reads {SCHEMA!r}: "
            "regenerate it with `python bench/leaderboard.py` or update the Space"
        )
    gt: dict[str, Mapping[str, Any]] = {}
    gt_path = root / "ground_truth.jsonl"
    if gt_path.is_file():
        gt = {str(r["id"]): r for r in _jsonl(gt_path)}
    meta_path = root / "ground_truth.meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    if reviews_dir is None:
        for cand in (root / "reviews", DEFAULT_REVIEWS):
            if cand.is_dir():
                reviews_dir = cand
                break
    return Results(
        root=root,
        origin=origin or f"local folder `{root}`",
        report=report,
        ground_truth=gt,
        meta=meta,
        reviews_dir=reviews_dir,
    )


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    """Rows of a JSONL file; a torn final line is skipped, a bad line elsewhere logged."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i != len(lines) - 1:
                log.warning("%s line %d is not JSON; skipped", path, i + 1)


_VERDICT_KEYS = ("act", "binary", "risk", "status", "reason", "fail", "harm", "src", "cite")


@dataclass(frozen=True)
class JudgeVerdicts:
    """One predictions file: the last decision line per id (raw outputs read on demand)."""

    path: Path
    """The predictions file."""
    rows: Mapping[str, Mapping[str, Any]]
    """id -> the verdict fields of its last decision line (no raw output)."""
    offsets: Mapping[str, int]
    """id -> byte offset of that line, to read its raw output when asked."""

    @classmethod
    def read(cls, path: Path) -> JudgeVerdicts:
        """Scan the file once; a torn final line is skipped."""
        rows: dict[str, Mapping[str, Any]] = {}
        offsets: dict[str, int] = {}
        if not path.is_file():
            raise SpaceDataError(
                f"predictions file {path} is missing: the results folder is incomplete; "
                "copy leaderboards/predictions/ with it"
            )
        with path.open("rb") as f:
            pos = 0
            for line in f:
                start, pos = pos, pos + len(line)
                try:
                    d = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn line (the writer appends; the last line may be cut)
                if isinstance(d, dict) and d.get("type") == "decision":
                    jid = str(d["id"])
                    rows[jid] = {k: d.get(k) for k in _VERDICT_KEYS}
                    offsets[jid] = start
        return cls(path=path, rows=rows, offsets=offsets)

    def raw(self, did: str) -> str:
        """The judge's raw output for one decision point ('' when none)."""
        if did not in self.offsets:
            return ""
        with self.path.open("rb") as f:
            f.seek(self.offsets[did])
            d = json.loads(f.readline())
        return str(d.get("raw") or d.get("error") or "")


# --------------------------------------------------------------------------- formatting


def fmt(x: float | None, nd: int = 3) -> str:
    """A number for a table; '–' for undefined."""
    return "–" if x is None else f"{x:.{nd}f}"


def fmt_ci(m: Mapping[str, Any]) -> str:
    """'value [lo, hi]' from a {value, ci} entry."""
    if m.get("value") is None:
        return "–"
    lo, hi = m.get("ci") or (None, None)
    return f"{m['value']:.3f} [{fmt(lo)}, {fmt(hi)}]"


def open_label(v: bool | None) -> str:
    """Open-weights cell."""
    return {True: "yes", False: "no"}.get(v, "–") if v is not None else "–"  # type: ignore[arg-type]


def md_escape(s: str) -> str:
    """Text safe inside Markdown (no HTML, no emphasis, no table pipes)."""
    out = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "\\`*_[]|#":
        out = out.replace(ch, "\\" + ch)
    return out


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


def _matches(e: Mapping[str, Any], terms: Sequence[str]) -> bool:
    hay = f"{e['id']} {e.get('display_name', '')}".lower()
    return not terms or any(t in hay for t in terms)


def search_terms(search: str | None) -> list[str]:
    """Comma-separated search terms, lower-cased (any term may match)."""
    return [t.strip().lower() for t in (search or "").split(",") if t.strip()]


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
        if not _matches(e, terms):
            continue
        if want and (e.get("backend") or "unknown") not in want:
            continue
        ow = e.get("open_weights")
        if open_weights == "Open" and ow is not True:
            continue
        if open_weights == "Closed" and ow is not False:
            continue
        if open_weights == "Unstated" and ow is not None:
            continue
        out.append(e)
    return out


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
    group_key, group = (
        ("by_source", source) if source else ("by_category", category) if category else ("", "")
    )
    # a fixed number of columns whatever the metric, so the widths set in app.py always fit
    cols_metrics = ([metric] + [m for m in HEADLINE if m != metric])[: len(HEADLINE)]
    plain = [m for m in PLAIN if m not in cols_metrics][: len(PLAIN) - 1]
    rows: list[dict[str, Any]] = []
    if not group_key:
        judges = sorted(
            judges,
            key=lambda e: (
                e["ranks"][metric]["rank"],
                e["metrics"][metric]["value"] is None,
                -(1 if res.higher_is_better(metric) else -1)
                * (e["metrics"][metric]["value"] or 0.0),
                e["id"],
            ),
        )
        for e in judges:
            row = {
                "Rank": e["ranks"][metric]["rank"],
                "Judge": e["display_name"],
                "Backend": e.get("backend") or "unknown",
                "Open": open_label(e.get("open_weights")),
            }
            for m in cols_metrics:
                row[f"{res.label(m)} [95% CI]"] = fmt_ci(e["metrics"][m]) + (
                    "†"
                    if m in ("auroc", "ece", "brier") and (e.get("risk_from_act") or 0) > 0
                    else ""
                )
            for m in plain:
                row[res.label(m)] = fmt(e["metrics"][m]["value"])
            row["p50 s"] = fmt(e["latency"]["p50_s"])
            rows.append(row)
        notes.insert(
            0,
            f"Ranked by **{md_escape(label)}** on all {rep['ground_truth']['steps']} scored test "
            f"steps ({rep['ground_truth']['trajectories']} trajectories). Judges whose paired "
            "bootstrap difference is not significant share a rank; intervals resample "
            "trajectories. † risk score derived from the act on some steps.",
        )
    else:
        g = rep[group_key].get(group)
        if g is None:
            raise SpaceDataError(f"no {group_key[3:]} called {group!r} in this leaderboard")
        sign = 1 if res.higher_is_better(metric) else -1
        vals = {e["id"]: g["judges"].get(e["id"], {}) for e in judges}
        judges = sorted(
            judges,
            key=lambda e: (
                vals[e["id"]].get(metric) is None,
                -sign * (vals[e["id"]].get(metric) or 0.0),
                e["id"],
            ),
        )
        for e in judges:
            row = {
                "Rank (all data)": e["ranks"][metric]["rank"],
                "Judge": e["display_name"],
                "Backend": e.get("backend") or "unknown",
                "Open": open_label(e.get("open_weights")),
            }
            for m in cols_metrics + plain:
                row[res.label(m)] = fmt(vals[e["id"]].get(m))
            rows.append(row)
        kind = "source" if group_key == "by_source" else "category"
        notes.insert(
            0,
            f"{kind.capitalize()} **{md_escape(group)}**: {g['n_steps']} scored steps "
            f"({g['n_unsafe']} unsafe) in {g['n_trajectories']} trajectories. Point estimates "
            f"sorted by **{md_escape(label)}**; intervals and tie groups are computed on all "
            "data only, so the rank shown is the overall one.",
        )
    if not rows:
        notes.append("No judge matches these filters.")
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=["Rank", "Judge", "Backend", "Open"])
    return df, "\n\n".join(notes)


def pending_markdown(report: Mapping[str, Any]) -> str:
    """Judges not on the table: not yet evaluated, incomplete, refused, superseded."""
    parts = []
    nye = report.get("not_yet_evaluated", [])
    parts.append(f"### Not yet evaluated ({len(nye)})")
    parts += [
        f"- `{md_escape(x['id'])}` {md_escape(x['display_name'])}: {md_escape(x['reason'])}"
        for x in nye
    ] or ["(none)"]
    inc = report.get("incomplete", [])
    if inc:
        parts.append(f"### Incomplete predictions, not ranked ({len(inc)})")
        parts += [
            f"- `{md_escape(x['id'])}`: {x['covered']} of {x['expected']} decision points"
            for x in inc
        ]
    ref = report.get("refused", [])
    if ref:
        parts.append(f"### Refused: made for another dataset version ({len(ref)})")
        parts += [f"- `{md_escape(x['judge'])}`: {md_escape(x['reason'])}" for x in ref]
    sup = report.get("superseded", [])
    if sup:
        parts.append(f"### Superseded configurations ({len(sup)})")
        parts += [f"- `{md_escape(x['judge'])}`: {md_escape(x['reason'])}" for x in sup]
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
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["Rank", "Judge"])


# --------------------------------------------------------------------------- compare tab


def judge_choices(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(display name, id) of the ranked judges."""
    return [(f"{e['display_name']} ({e['id']})", e["id"]) for e in report["judges"]]


def paired(report: Mapping[str, Any], a: str, b: str) -> dict[str, dict[str, Any]]:
    """metric -> {value, ci} of the paired difference a - b from the JSON (negated when the JSON
    holds b - a); {} when the JSON carries none for this pair."""
    pdiff = report.get("paired_differences") or {}
    for p in pdiff.get("pairs", []):
        if (p["a"], p["b"]) == (a, b):
            return dict(p["diff"])
        if (p["a"], p["b"]) == (b, a):
            return {
                m: {
                    "value": None if d["value"] is None else -d["value"],
                    "ci": [
                        None if d["ci"][1] is None else -d["ci"][1],
                        None if d["ci"][0] is None else -d["ci"][0],
                    ],
                }
                for m, d in p["diff"].items()
            }
    return {}


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
        sig = "–"
        if d and d["value"] is not None and d["ci"][0] is not None:
            lo, hi = d["ci"]
            if lo > 0 or hi < 0:
                better_a = (d["value"] > 0) == bool(m["higher_is_better"])
                sig = f"yes: {'A' if better_a else 'B'} better"
            else:
                sig = "no"
            if name in HEADLINE:
                verdicts.append(f"**{md_escape(m['label'])}**: {sig}")
        rows.append(
            {
                "Metric": m["label"],
                "A": fmt_ci(ea["metrics"][name]),
                "B": fmt_ci(eb["metrics"][name]),
                "A − B [95% paired CI]": fmt_ci(d) if d else "–",
                "Significant": sig,
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
                "A act": ra["act"] or f"({ra['status']})",
                "A risk": "–" if ra["risk"] is None else str(ra["risk"]),
                "B act": rb["act"] or f"({rb['status']})",
                "B risk": "–" if rb["risk"] is None else str(rb["risk"]),
            }
        )
    note = f"{len(ids)} of {both} decision points answered by both get a different act"
    note += f" (first {limit} shown)." if len(ids) > limit else "."
    cols = ["Decision point", "Gold", "Split", "A act", "A risk", "B act", "B risk"]
    return (pd.DataFrame(rows) if rows else pd.DataFrame(columns=cols)), note


# --------------------------------------------------------------------------- browse tab


@dataclass(frozen=True)
class Texts:
    """Where Browse finds the decision points' text, and which sources it may show."""

    origin: str
    """Markdown: where the text comes from, or why there is none and how to get it."""
    path: Path | None
    """The decision_points.jsonl read, or None when no text is available."""
    version: str | None
    """Dataset version of that file."""
    offsets: Mapping[str, int] = field(default_factory=dict)
    """Decision point id -> byte offset of its line (withheld sources left out)."""
    withheld: Mapping[str, str] = field(default_factory=dict)
    """Source -> why its text is not shown here."""
    card: str = ""
    """The built dataset's card (README.md), when present."""

    def point(self, did: str) -> dict[str, Any] | None:
        """One decision point's record (DecisionPoint.to_dict() + split, disputed), or None."""
        if self.path is None or did not in self.offsets:
            return None
        with self.path.open("rb") as f:
            f.seek(self.offsets[did])
            d: dict[str, Any] = json.loads(f.readline())
        try:  # in a checkout, hold the record to the schema the build wrote
            from bench.schema import DecisionPoint
        except ImportError:
            return d
        DecisionPoint.from_dict(d)
        return d


def _bench_build_dir() -> Path:
    try:
        from bench.dataset import BUILD_DIR
    except ImportError:
        return DEFAULT_BUILD
    return Path(BUILD_DIR)


def _raw_present(source: str) -> bool:
    """True when this machine holds the source's raw upstream data (a checkout with bench)."""
    try:
        from bench.paths import data_root
        from bench.sources import get

        folder = data_root() / get(source).folder
    except Exception:  # noqa: BLE001 - no bench, no data root, unknown source: not present
        return False
    return folder.is_dir() and any(folder.iterdir())


def _local_version(build_dir: Path, want: str | None) -> str | None:
    """The leaderboard's version when built here, else the newest build, else None."""
    if want and (build_dir / want / POINTS_FILE).is_file():
        return want
    try:
        from bench.dataset import latest_version

        return latest_version(build_dir)
    except ImportError:
        latest = build_dir / "LATEST"
        return latest.read_text(encoding="utf-8").strip() if latest.is_file() else None
    except Exception:  # noqa: BLE001 - bench says nothing is built
        return None


NO_TEXT = (
    "No decision-point text is available here. Ids, gold labels and every judge's verdict are "
    "shown; the text itself (policy, visible turns, proposed action) is never committed to the "
    "repository. To see it locally, build the dataset: `python bench/build.py` (the embedded "
    "sample builds offline; R-Judge, StepShield and ASSEBench need their raw data, see "
    "docs/sources.md). On the Hub, set `FORESIGHT_DATASET_REPO` to the dataset that "
    "`bench/build.py --push-to-hub` published."
)


def load_texts(
    build_dir: Path | None = None,
    *,
    version: str | None = None,
    dataset_repo: str | None = None,
) -> Texts:
    """Find the text for Browse: the Hub dataset named by ``dataset_repo`` or
    $FORESIGHT_DATASET_REPO; else (not on the Hub) the local build of ``version`` (the
    leaderboard's) or the newest one. Sources that may not be redistributed are withheld on the
    Hub, and locally unless their raw data is on this machine."""
    repo = (dataset_repo or os.environ.get(DATASET_ENV, "")).strip()
    hub = bool(repo) or on_hub()
    if repo:
        from huggingface_hub import snapshot_download

        try:
            folder = Path(
                snapshot_download(
                    repo_id=repo,
                    repo_type="dataset",
                    allow_patterns=[POINTS_FILE, "manifest.json", "README.md"],
                )
            )
        except Exception as e:  # noqa: BLE001 - a missing text is not fatal to the page
            log.warning("cannot download %s: %s", repo, e)
            return Texts(
                origin=f"The dataset `{repo}` could not be downloaded ({e}). " + NO_TEXT,
                path=None,
                version=None,
            )
        where = f"Hub dataset `{repo}`"
    elif on_hub():
        return Texts(origin=NO_TEXT, path=None, version=None)
    else:
        root = Path(build_dir) if build_dir else _bench_build_dir()
        v = _local_version(root, version)
        if v is None or not (root / v / POINTS_FILE).is_file():
            return Texts(origin=f"No build under `{root}`. " + NO_TEXT, path=None, version=None)
        folder = root / v
        where = f"local build `{folder}`"
    path = folder / POINTS_FILE
    if not path.is_file():
        return Texts(origin=f"{where} has no {POINTS_FILE}. " + NO_TEXT, path=None, version=None)
    manifest_path = folder / "manifest.json"
    manifest = (
        json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    )
    configs: Mapping[str, Any] = manifest.get("configs", {})
    withheld: dict[str, str] = {}
    offsets: dict[str, int] = {}
    seen: set[str] = set()
    with path.open("rb") as f:
        pos = 0
        for line in f:
            start, pos = pos, pos + len(line)
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            src = str(d.get("source", ""))
            if src not in seen:
                seen.add(src)
                free = bool(configs.get(src, {}).get("redistributable", False))
                if not free and hub:
                    withheld[src] = (
                        "its licence does not allow redistribution (or the manifest does not "
                        "say it does), so the Hub copy of the Space never shows its text"
                    )
                elif not free and not _raw_present(src):
                    withheld[src] = (
                        "its licence does not allow redistribution: its text is shown only on a "
                        "machine that holds its raw data (set FORESIGHT_DATA)"
                    )
            if src not in withheld:
                offsets[str(d["id"])] = start
    card_path = folder / "README.md"
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else ""
    v = str(manifest.get("version") or folder.name)
    origin = f"Text from the {where} (dataset version `{v}`)."
    if version and v != version:
        origin += (
            f" **The leaderboard is for version `{version}`**: texts may not match its ids; "
            "rebuild that version or publish it."
        )
    for src, why in sorted(withheld.items()):
        origin += f" {md_escape(src)}: {why}."
    return Texts(origin=origin, path=path, version=v, offsets=offsets, withheld=withheld, card=card)


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


def _reviews(reviews_dir: Path | None, trajectory_id: str) -> list[Mapping[str, Any]]:
    if reviews_dir is None or not reviews_dir.is_dir():
        return []
    out = []
    for p in sorted(reviews_dir.glob("*.jsonl")):
        out += [r for r in _jsonl(p) if r.get("trajectory_id") == trajectory_id]
    return sorted(out, key=lambda r: str(r.get("time", "")))


def _esc(s: Any) -> str:
    import html

    return html.escape("" if s is None else str(s))


def _block(title: str, body: str, cls: str = "") -> str:
    return f'<div class="fs-block {cls}"><div class="fs-title">{_esc(title)}</div>{body}</div>'


def _pre(s: Any) -> str:
    return f'<pre class="fs-pre">{_esc(s)}</pre>'


def _action_html(text: Any, tool: Any, arguments: Any) -> str:
    out = ""
    if tool:
        out += f"<div><b>tool</b> <code>{_esc(tool)}</code></div>"
    if arguments:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments, indent=1)
        out += f"<div><b>arguments</b></div>{_pre(args)}"
    return out + _pre(text)


def point_html(res: Results, texts: Texts, did: str) -> str:
    """The decision point as HTML (every string escaped): gold label with its rationale, the
    policy, the visible prefix (numbered as the prompts number it) and the proposed action."""
    g = res.ground_truth.get(did, {})
    d = texts.point(did)
    src = str(g.get("source") or (d or {}).get("source") or did.split(":", 1)[0])
    gold = (d or {}).get("gold") or {}
    head = (
        f"<div class='fs-head'><b>{_esc(did)}</b> · source <b>{_esc(src)}</b> · category "
        f"<b>{_esc(g.get('category') or (d or {}).get('category') or '–')}</b> · split "
        f"<b>{_esc(g.get('split') or (d or {}).get('split') or '–')}</b>"
        + (" · <b>disputed</b> (not scored)" if g.get("disputed") else "")
        + "</div>"
    )
    if not g and d is None:
        return (
            head + "<p>This id is neither in the ground truth nor in the text available here.</p>"
        )
    cite = gold.get("cite")
    items = [
        ("gold act", g.get("act") or gold.get("act")),
        ("binary", g.get("binary")),
        ("phase", g.get("phase") or gold.get("phase")),
        ("onset k", g.get("onset", gold.get("onset"))),
        ("fail", g.get("fail") or gold.get("fail")),
        ("harm", g.get("harm") or gold.get("harm")),
        ("src", g.get("src") or gold.get("src")),
        ("evidence turn", cite),
        ("scored", g.get("scored", gold.get("scored"))),
        ("reviewed", g.get("reviewed", gold.get("reviewed"))),
        ("label set by", gold.get("provenance")),
    ]
    table = "".join(
        f"<span>{_esc(k)} <b>{_esc('–' if v is None or v == '' else v)}</b></span>"
        for k, v in items
    )
    tid = str(g.get("trajectory_id") or (d or {}).get("trajectory_id") or "")
    notes = _reviews(res.reviews_dir, tid)
    rationale = "".join(
        f"<li><b>{_esc(r.get('reviewer'))}</b> ({_esc(r.get('decision'))}, {_esc(r.get('time'))}): "
        f"{_esc(r.get('note') or '(no note)')}</li>"
        for r in notes
    )
    rationale = (
        f"<div><b>Rationale (reviewers' notes)</b><ul>{rationale}</ul></div>"
        if rationale
        else "<div class='fs-muted'>No reviewer note for this trajectory: the label comes from "
        "the rule-based proposer named above and the source's own label.</div>"
    )
    parts = [
        head,
        _block("Gold label", f"<div class='fs-kv'>{table}</div>{rationale}", "fs-gold"),
    ]
    if d is None:
        why = texts.withheld.get(src)
        msg = (
            f"The text of {_esc(src)} decision points is not shown here: {_esc(why)}."
            if why
            else _esc(
                texts.origin
                if texts.path is None
                else f"{did} is not in {texts.path.name} (version {texts.version})."
            )
        )
        parts.append(_block("Text", f"<p>{msg}</p>"))
        return "".join(parts)
    pol = d.get("policy") or {}
    pol_html = ""
    if pol.get("system"):
        pol_html += f"<div><b>system</b></div>{_pre(pol['system'])}"
    if pol.get("task"):
        pol_html += f"<div><b>task</b></div>{_pre(pol['task'])}"
    if pol.get("constraints"):
        pol_html += (
            "<div><b>constraints</b></div><ul>"
            + "".join(f"<li>{_esc(c)}</li>" for c in pol["constraints"])
            + "</ul>"
        )
    parts.append(_block("Policy", pol_html or "<p class='fs-muted'>(empty)</p>"))
    turns = []
    for n, t in enumerate(d.get("history") or [], start=1):
        body = ""
        if t.get("content"):
            body += _pre(t["content"])
        if t.get("thought"):
            body += f"<div><b>thought</b></div>{_pre(t['thought'])}"
        a = t.get("action")
        if a:
            body += "<div><b>action</b></div>" + _action_html(
                a.get("text"), a.get("tool"), a.get("arguments")
            )
        if t.get("observation"):
            body += f"<div><b>observation</b></div>{_pre(t['observation'])}"
        mark = " fs-cited" if cite == n else ""
        star = " · cited as evidence" if cite == n else ""
        turns.append(
            f"<div class='fs-turn{mark}'><div class='fs-turnhead'>#{n} {_esc(t.get('role'))}{star}</div>{body}</div>"
        )
    parts.append(
        _block(
            f"Visible prefix ({len(turns)} turns)",
            "".join(turns) or "<p class='fs-muted'>(nothing before the first action)</p>",
        )
    )
    act = d.get("action") or {}
    body = ""
    if d.get("thought"):
        body += f"<div><b>thought</b></div>{_pre(d['thought'])}"
    body += "<div><b>action</b></div>" + _action_html(
        act.get("text"), act.get("tool"), act.get("arguments")
    )
    parts.append(
        _block(f"Proposed action (#{len(turns) + 1}, k = {d.get('k')})", body, "fs-action")
    )
    return "".join(parts)


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
                "Act": v["act"] or "–",
                "Risk": "–" if v["risk"] is None else str(v["risk"]),
                "Binary": v["binary"] or "–",
                "Status": v["status"] or "–",
                "fail / harm / src": " / ".join(str(v[k] or "–") for k in ("fail", "harm", "src")),
                "Reason": str(v["reason"] or "")[:300],
            }
        )
    cols = ["Judge", "Act", "Risk", "Binary", "Status", "fail / harm / src", "Reason"]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=cols)


RAW_LIMIT = 20_000
"""Characters of one raw output shown (the predictions file keeps all of it)."""


def raw_html(res: Results, did: str) -> str:
    """Every ranked judge's raw output for one decision point, each in a collapsible block."""
    out = []
    for e in res.judges:
        try:
            jv = res.verdicts(e["id"])
        except SpaceDataError as err:
            out.append(f"<p class='fs-muted'>{_esc(err)}</p>")
            continue
        if did not in jv.rows:
            continue
        raw = jv.raw(did)
        cut = len(raw) > RAW_LIMIT
        body = (
            _pre(raw[:RAW_LIMIT] + ("\n[… cut for display]" if cut else ""))
            if raw
            else ("<p class='fs-muted'>(no raw output: this judge returns verdicts directly)</p>")
        )
        out.append(
            f"<details class='fs-raw'><summary>{_esc(e['display_name'])}</summary>{body}</details>"
        )
    return "".join(out) or "<p class='fs-muted'>No judge has a verdict on this decision point.</p>"
