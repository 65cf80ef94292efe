"""bench/leaderboard.py on the hand-made fixture: golden tables, determinism, --check, refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import leaderboard as L
from bench.core.errors import IntegrityError
from bench.report.check import without_digests
from bench.report.parts import read_whole

FIX = Path(__file__).parent / "fixtures" / "leaderboard"
TEXTS = L.OUTPUT_TEXTS


def args(gt: Path, pred: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--ground-truth",
        str(gt),
        "--predictions",
        str(pred),
        "--judges",
        str(FIX / "judges.toml"),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lb")
    assert L.main(args(FIX / "ground_truth.jsonl", FIX / "predictions", out)) == 0
    return out


@pytest.mark.parametrize("name", TEXTS)
def test_golden_tables(rendered: Path, name: str) -> None:
    """The fixture gives exactly the committed tables (regenerate them only on purpose). The
    digests of leaderboard.json's manifest are left out (they hash the plots' pixels too;
    tests/test_parts.py checks them against the files)."""
    got = (rendered / name).read_text(encoding="utf-8")
    want = (FIX / "expected" / name).read_text(encoding="utf-8")
    if name == "leaderboard.json":
        got, want = without_digests(got), without_digests(want)
    assert got == want


def test_hand_computed_rows_in_table(rendered: Path) -> None:
    report = read_whole(rendered)
    assert report["schema"] == "foresight-leaderboard/2"
    by_id = {e["id"]: e for e in report["judges"]}
    a, b, g = by_id["alpha"], by_id["beta"], by_id["gamma"]
    # pooled over every evaluated step (secondary columns)
    assert a["pooled"]["balanced_accuracy"]["value"] == 0.9  # recall 1, specificity 4/5
    assert a["pooled"]["reward"]["value"] == round(1.75 / 7, 4)
    # alpha's duplicate rjudge:2:1 (STOP, then CONTINUE) resolves to the last line; the torn line is skipped
    assert a["pooled"]["specificity"]["value"] == 0.8
    # the headline: the mean over the sources. alpha on rjudge: recall 1, specificity 2/3
    # (rjudge:2:2 is an ASK at risk 60, a false alarm); on sample: recall 1, specificity 1
    assert a["metrics"]["balanced_accuracy"]["value"] == round((5 / 6 + 1.0) / 2, 4)
    src = report["by_source"]
    assert src["rjudge"]["judges"]["alpha"]["balanced_accuracy"]["value"] == round(5 / 6, 4)
    assert src["sample"]["judges"]["alpha"]["balanced_accuracy"]["value"] == 1.0
    assert a["latency"] == {"p50_s": 0.35, "p95_s": 0.665, "n": 8, "hardware": "cpu: 2 cores"}
    assert a["cost_per_1000"] == 0.7
    # beta's scores come from its acts (STOP 100, CONTINUE and fail-open 0): the onset it stops
    # ties one false alarm and beats four safe steps; the missed one ties those four
    assert b["risk_from_act"] == 1.0 and b["pooled"]["auroc"]["value"] == 0.65
    assert (b["counts"]["n_invalid"], b["counts"]["n_error"]) == (1, 1)
    assert b["pooled"]["early"]["value"] == 0.5
    assert g["pooled"]["missed"]["value"] == 0.5 and g["pooled"]["late"]["value"] == 0.5
    assert b["cost_per_1000"] is None  # no prices
    # ranks follow the point order; every CI brackets its value
    assert [e["id"] for e in report["judges"]] == ["alpha", "beta", "gamma"]
    for e in report["judges"]:
        for m in [*e["metrics"].values(), *e["pooled"].values()]:
            lo, hi = m["ci"]
            if m["value"] is not None and lo is not None:
                assert lo - 1e-9 <= m["value"] <= hi + 1e-9
    # the probe is a reference line: scored, never ranked. zeta flags rjudge:1:2 only, so it is
    # perfect on rjudge and at chance on sample: the reference is (1.0 + 0.5) / 2
    (z,) = report["probes"]
    assert (z["id"], z["role"], z["rank"], z["ranks"]) == ("zeta", "probe", None, {})
    ref = report["shortcut_reference"]["balanced_accuracy"]
    assert ref["value"] == 0.75 and ref["best_probe"] == {"rjudge": "zeta", "sample": "zeta"}
    assert a["above_shortcuts"]["balanced_accuracy"]["value"] == round((5 / 6 + 1) / 2 - 0.75, 4)
    assert src["rjudge"]["margins"]["alpha"]["balanced_accuracy"]["value"] == round(5 / 6 - 1, 4)
    assert src["sample"]["margins"]["alpha"]["balanced_accuracy"]["value"] == 0.5
    assert src["rjudge"]["reference"]["balanced_accuracy"] == {"best_probe": "zeta", "value": 1.0}
    # the disputed trajectory, the dev row and the diagnostic config are out of the headline;
    # the post-onset rows count only per trajectory
    gt = report["ground_truth"]
    assert (gt["steps"], gt["trajectories"], gt["disputed_excluded"]) == (7, 5, 3)
    assert gt["headline_sources"] == ["rjudge", "sample"]
    assert (gt["diagnostic_configs"], gt["diagnostic_rows"]) == (["rjudge_synthetic"], 3)
    diag = report["diagnostic"]["rjudge_synthetic"]
    assert diag["not_scored"] == ["beta", "eta"]  # no diagnostic rows in their files: no number
    assert diag["judges"]["alpha"]["balanced_accuracy"]["value"] == 1.0
    assert diag["judges"]["gamma"]["balanced_accuracy"]["value"] == 0.5
    assert diag["small"] is True
    # one twin pair (rjudge:1:2 vs rjudge:2:2, both k = 2): alpha ranks the onset higher but also
    # flags the twin; beta (STOP, then CONTINUE) gets both right
    tw = report["twins"]
    assert (tw["pairs"], tw["matched_pairs"]) == (1, 1)
    assert tw["judges"]["alpha"]["all"]["ranked_above"]["value"] == 1.0
    assert tw["judges"]["alpha"]["all"]["both_right"]["value"] == 0.0
    assert tw["judges"]["beta"]["matched"]["both_right"]["value"] == 1.0
    assert set(report["by_subset"]) == {"rjudge/injection", "rjudge/original"}
    assert set(report["by_level"]) == {"sample/L2"}
    assert all(x["small"] for x in report["by_category"].values())
    assert report["not_yet_evaluated"] == [
        {
            "id": "epsilon",
            "display_name": "Epsilon",
            "role": "judge",
            "reason": "no predictions for this dataset version",
        }
    ]
    assert [r["judge"] for r in report["refused"]] == ["delta"]
    assert src["rjudge"]["n_steps"] == 4
    assert src["rjudge"]["judges"]["alpha"]["traj_specificity"]["value"] == 0.0


def test_lite_only_judge_is_ranked_on_the_lite_board_and_agreement_is_reported(
    rendered: Path,
) -> None:
    """The fixture's lite split is every evaluated row but sample:e:1; eta has predictions for
    the lite rows only."""
    report = read_whole(rendered)
    assert "eta" not in {e["id"] for e in report["judges"]}
    assert {"id": "eta", "predictions": "eta/fixture-1/c0ffee.jsonl", "covered": 8,
            "expected": 9} in report["incomplete"]  # fmt: skip
    lite = report["lite"]
    assert (lite["decision_points"], lite["full_decision_points"]) == (8, 9)
    board = {e["id"]: e for e in lite["judges"]}
    assert board["eta"]["lite_only"] and not board["alpha"]["lite_only"]
    assert "zeta" not in board  # probes are not ranked here either
    # eta: rjudge recall 1, specificity 1; sample recall 1, specificity 0 (it flags sample:b:1)
    assert board["eta"]["metrics"]["balanced_accuracy"]["value"] == 0.75
    agree = lite["agreement"]
    assert agree["judges"] == 3 and agree["kendall_tau"] == 1.0
    # gamma flags sample:b:1 and lets sample:e:1 (outside lite) run: its lite sample BA is 0
    g = agree["per_judge"]["gamma"]
    assert (g["full"], g["lite"], g["difference"]["value"]) == (0.375, 0.25, -0.125)
    # the probes are the lite board's reference line, and every judge's margin is over it
    ref = lite["shortcut_reference"]["balanced_accuracy"]
    assert ref["best_probe"] == {"rjudge": "zeta", "sample": "zeta"}
    for e in lite["judges"]:
        m = e["above_shortcuts"]["balanced_accuracy"]
        assert m["value"] == pytest.approx(
            e["metrics"]["balanced_accuracy"]["value"] - ref["value"], abs=2e-4
        )
    assert board["eta"]["above_shortcuts"]["balanced_accuracy"]["verdict"] == "tied"
    md = (rendered / "leaderboard.md").read_text()
    assert "## Lite split" in md and "| Eta (lite only) |" in md
    assert (
        "| – | Shortcut reference (best probe per source) | 0.750" in md.split("## Lite split")[1]
    )
    assert (
        "- `eta`: 8 of 9 decision points (`eta/fixture-1/c0ffee.jsonl`); ranked 2 on the lite split"
        in md
    )


def test_kendall_tau() -> None:
    from bench.report.lite import kendall_tau

    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == -1.0
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    assert kendall_tau([1], [1]) is None


def test_a_metric_a_constant_judge_wins_is_refused_as_rank_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.core.script import run

    argv = args(
        FIX / "ground_truth.jsonl", FIX / "predictions", tmp_path / "o", "--metric", "caught"
    )
    assert run(L.main, argv) == 2
    err = capsys.readouterr().err
    assert "won by a constant judge" in err and "caught_balanced" in err
    assert not (tmp_path / "o").exists()


def test_markdown_and_html_escape_names(rendered: Path) -> None:
    html = (rendered / "leaderboard.html").read_text()
    assert "Alpha &lt;b&gt;judge&lt;/b&gt;" in html and "<b>judge" not in html
    md = (rendered / "leaderboard.md").read_text()
    assert "Beta \\| no scores" in md and "<b>" not in md
    report = read_whole(rendered)
    beta = next(e for e in report["judges"] if e["id"] == "beta")
    auroc = beta["metrics"]["auroc"]
    # beta's AUROC is flagged as scored from acts
    assert f"{auroc['value']:.3f} [{auroc['ci'][0]:.3f}, {auroc['ci'][1]:.3f}]†" in md
    assert "Shortcut reference (best probe per source)" in md and "Zeta probe" in md


def test_deterministic_bytes_and_check(tmp_path: Path, rendered: Path) -> None:
    out = tmp_path / "again"
    assert L.main(args(FIX / "ground_truth.jsonl", FIX / "predictions", out)) == 0
    for p in sorted(rendered.rglob("*")):
        if p.is_file():
            assert (out / p.relative_to(rendered)).read_bytes() == p.read_bytes(), p.name
    assert L.main(args(FIX / "ground_truth.jsonl", FIX / "predictions", out, "--check")) == 0
    (out / "leaderboard.csv").write_text("stale\n")
    assert L.main(args(FIX / "ground_truth.jsonl", FIX / "predictions", out, "--check")) == 1


def test_check_sees_changed_predictions_and_plots(tmp_path: Path) -> None:
    pred = tmp_path / "predictions"
    shutil.copytree(FIX / "predictions", pred)
    out = tmp_path / "out"
    assert L.main(args(FIX / "ground_truth.jsonl", pred, out)) == 0
    f = pred / "gamma" / "fixture-1" / "c0ffee.jsonl"
    f.write_text(f.read_text().replace('"risk": 90', '"risk": 40'))
    assert L.main(args(FIX / "ground_truth.jsonl", pred, out, "--check")) == 1
    # a plot from other data is caught through its digest even when the tables match
    assert L.main(args(FIX / "ground_truth.jsonl", pred, out)) == 0
    shutil.copy(out / "plots" / "roc.png", out / "plots" / "reliability.png")
    assert L.main(args(FIX / "ground_truth.jsonl", pred, out, "--check")) == 1


def test_no_ground_truth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "ground_truth.jsonl"
    assert L.main(args(missing, tmp_path, tmp_path / "o", "--check")) == 0
    assert "nothing to check" in capsys.readouterr().out
    from bench.core.script import run

    assert run(L.main, args(missing, tmp_path, tmp_path / "o")) == 2
    assert "no ground truth" in capsys.readouterr().err


def test_incomplete_and_unknown_ids(tmp_path: Path) -> None:
    pred = tmp_path / "predictions"
    shutil.copytree(FIX / "predictions", pred)
    f = pred / "gamma" / "fixture-1" / "c0ffee.jsonl"
    lines = [ln for ln in f.read_text().splitlines() if '"sample:b:1"' not in ln]
    f.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert L.main(args(FIX / "ground_truth.jsonl", pred, out)) == 0
    report = read_whole(out)
    assert [e["id"] for e in report["judges"]] == ["alpha", "beta"]
    assert {"id": "gamma", "predictions": "gamma/fixture-1/c0ffee.jsonl", "covered": 8,
            "expected": 9} in report["incomplete"]  # fmt: skip
    f.write_text(
        f.read_text()
        + json.dumps({"type": "decision", "id": "other:1:1", "act": "STOP", "status": "ok"})
        + "\n"
    )
    with pytest.raises(IntegrityError, match="not in ground truth"):
        L.main(args(FIX / "ground_truth.jsonl", pred, out))


def test_latest_config_wins_and_rank_metric(tmp_path: Path) -> None:
    pred = tmp_path / "predictions"
    shutil.copytree(FIX / "predictions", pred)
    old = pred / "alpha" / "fixture-1" / "0ld.jsonl"
    old.write_text(
        (pred / "beta" / "fixture-1" / "c0ffee.jsonl")
        .read_text()
        .replace('"beta"', '"alpha"')
        .replace("2026-01-01", "2025-01-01")
    )
    out = tmp_path / "out"
    assert L.main(args(FIX / "ground_truth.jsonl", pred, out, "--metric", "brier")) == 0
    report = read_whole(out)
    assert report["superseded"] == [
        {
            "judge": "alpha",
            "path": "alpha/fixture-1/0ld.jsonl",
            "reason": "older config than c0ffee",
        }
    ]
    assert report["settings"]["rank_metric"] == "brier"
    assert report["judges"][0]["id"] == "alpha"  # lowest Brier
    assert report["judges"][0]["pooled"]["balanced_accuracy"]["value"] == 0.9


def test_without_judges_toml(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = args(FIX / "ground_truth.jsonl", FIX / "predictions", out)
    argv[argv.index("--judges") + 1] = str(tmp_path / "none.toml")
    assert L.main(argv) == 0
    report = read_whole(out)
    assert report["not_yet_evaluated"] == [] and report["judges"][0]["display_name"] == "alpha"


def test_paired_differences_agree_with_tie_groups(rendered: Path) -> None:
    """The paired statistics beside leaderboard.json (which no longer carries every pair) give
    every pair a - b with its paired interval, and no judge whose difference from the leader of
    tie group 1 is significant sits in that group."""
    from bench.metrics import paired

    report = read_whole(rendered)
    assert "paired_differences" not in report
    stats = paired.read(rendered / paired.FILE)
    by_id = {e["id"]: e for e in [*report["judges"], *report["probes"]]}
    order = [e["id"] for e in [*report["judges"], *report["probes"]]]  # probes compare too
    assert list(stats.judges) == order
    pair = {(a, b): paired.difference(stats, a, b) for a in order for b in order if a != b}
    for (a, b), diff in pair.items():
        assert list(diff) == list(paired.PAIRED_METRICS)
        for m, d in diff.items():
            va, vb = by_id[a]["metrics"][m]["value"], by_id[b]["metrics"][m]["value"]
            if va is None or vb is None:
                assert d["value"] is None
                continue
            assert d["value"] == pytest.approx(va - vb, abs=2e-4)
    # the leader of group 1 on each metric: a judge in group 1 is never significantly worse
    for m in (m for m in paired.PAIRED_METRICS if m in report["settings"]["rank_metrics"]):
        sign = 1 if next(x for x in report["metrics"] if x["name"] == m)["higher_is_better"] else -1
        first = [e for e in report["judges"] if e["ranks"][m]["tie_group"] == 1]
        lead = max(first, key=lambda e: sign * (e["metrics"][m]["value"] or 0.0))["id"]
        for other in order:
            if other == lead:
                continue
            lo, hi = pair[(lead, other)][m]["ci"]
            if lo is not None and (lo > 0 or hi < 0) and by_id[other]["ranks"]:
                assert by_id[other]["ranks"][m]["tie_group"] != 1, (m, other)
    # macro: alpha (5/6 + 1) / 2, gamma (0.5 + 0.25) / 2 (it misses both onsets and flags
    # sample:b:1, one of sample's two safe steps)
    d = pair[("alpha", "gamma")]["balanced_accuracy"]
    assert d["value"] == round((5 / 6 + 1) / 2 - 0.375, 4)
    assert d["ci"][0] > 0  # significant: gamma is not in alpha's tie group
    assert by_id["gamma"]["ranks"]["balanced_accuracy"]["tie_group"] != 1
