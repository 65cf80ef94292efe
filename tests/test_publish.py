"""leaderboard.py --push-to-hub against the fake Hub, then the Space reading that repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.fakehub import FakeHub

from bench import leaderboard as L
from tests._space_support import FIX, load_space


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import huggingface_hub.constants as hc

    hub = FakeHub().start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN", "hf_fake_token_for_tests")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hc, "ENDPOINT", hub.url)
    monkeypatch.setattr(
        hc, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}"
    )
    yield hub
    hub.stop()


def argv(out: Path, *extra: str) -> list[str]:
    return [
        "--ground-truth", str(FIX / "ground_truth.jsonl"), "--predictions", str(FIX / "predictions"),
        "--judges", str(FIX / "judges.toml"), "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip


def test_dry_run_lists_the_upload_and_sends_nothing(
    tmp_path: Path, fake_hub: FakeHub, capsys: pytest.CaptureFixture[str]
) -> None:
    assert L.main(argv(tmp_path / "o", "--push-to-hub", "tester/results", "--dry-run")) == 0
    out = capsys.readouterr().out
    assert "would upload" in out and "leaderboard.json" in out and "ground_truth.jsonl" in out
    assert "predictions/alpha/fixture-1/c0ffee.jsonl" in out
    assert "predictions/alpha/fixture-1/stress/thought_injection/c0ffee.jsonl" in out
    assert "delta" not in out  # another dataset version is not published
    assert fake_hub.repo("dataset", "tester/results") is None


def test_push_is_one_commit_withholds_rjudge_raw_and_the_space_reads_it(
    tmp_path: Path, fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert L.main(argv(tmp_path / "o", "--push-to-hub", "tester/results")) == 0
    said = capsys.readouterr().out
    assert "pushed to tester/results at commit" in said
    repo = fake_hub.repo("dataset", "tester/results")
    assert repo is not None
    ours = [c for c in repo.commits if c.message != "initial commit"]
    assert len(ours) == 1  # one commit for everything
    files = repo.commits[-1].files
    assert {"leaderboard.json", "leaderboard.md", "robustness.csv", "ground_truth.jsonl"} <= set(
        files
    )
    assert any(f.startswith("plots/") for f in files)
    alpha = files["predictions/alpha/fixture-1/c0ffee.jsonl"].decode().splitlines()
    rows = [json.loads(x) for x in alpha]
    rj = [r for r in rows if r.get("type") == "decision" and r["id"].startswith("rjudge:")]
    sm = [r for r in rows if r.get("type") == "decision" and r["id"].startswith("sample:")]
    assert rj and all(r["raw"] == "" and r["raw_withheld"] for r in rj)  # ids and verdicts stay
    assert all(r["act"] for r in rj) and not any(r.get("raw_withheld") for r in sm)
    # the Space, pointed at the repository, reads it and says which revision
    app, data = load_space()
    monkeypatch.setenv(data.RESULTS_ENV, "tester/results")
    root, origin = data.results_root(tmp_path / "ignored")
    assert "tester/results" in origin and repo.commits[-1].sha[:12] in origin
    res = data.load_results(root, origin)
    assert [e["id"] for e in res.judges] == ["alpha", "beta", "gamma"]


def test_withhold_raw_empties_rjudge_raw_in_place_and_changes_no_figure(tmp_path: Path) -> None:
    import shutil

    from bench.report.inputs import load_ground_truth
    from bench.report.publish import unwithheld_lines

    preds = tmp_path / "predictions"
    shutil.copytree(FIX / "predictions", preds)
    alpha = preds / "alpha" / "fixture-1" / "c0ffee.jsonl"  # make alpha a generative judge
    out, text = [], alpha.read_text()
    for x in text.splitlines():
        try:
            r = json.loads(x)
        except ValueError:  # the fixture's malformed line stays malformed
            out.append(x)
            continue
        if r.get("type") == "decision":
            r["raw"] = f"\\boxed{{act:{r['act']}}} the trajectory says ..."
        out.append(json.dumps(r))
    alpha.write_text("\n".join(out) + ("\n" if text.endswith("\n") else ""))
    _, meta = load_ground_truth(FIX / "ground_truth.jsonl")
    before = unwithheld_lines(sorted(preds.rglob("*.jsonl")), meta)
    assert list(before) == [str(alpha)]
    args = [a if a != str(FIX / "predictions") else str(preds) for a in argv(tmp_path / "out")]
    assert L.main([*args, "--withhold-raw"]) == 0
    assert unwithheld_lines(sorted(preds.rglob("*.jsonl")), meta) == {}
    from bench.judging import predictions

    rows = [r for p in sorted(preds.rglob("*.jsonl")) for r in predictions.scan(p)[0]]
    assert alpha.read_text().endswith('"act": "ST')  # the truncated last line is kept as it was
    rj = [r for r in rows if r.get("type") == "decision" and r["id"].startswith("rjudge:")]
    sm = [r for r in rows if r.get("type") == "decision" and r["id"].startswith("sample:")]
    assert rj and all(r["raw"] == "" and r["act"] for r in rj)
    assert any(r.get("raw_withheld") for r in rj)
    assert all(r["raw"] for r in sm if "trajectory says" in str(r.get("raw")))
    assert not any(r.get("raw_withheld") for r in sm)
    assert L.main([*args, "--withhold-raw"]) == 0  # idempotent
    assert unwithheld_lines(sorted(preds.rglob("*.jsonl")), meta) == {}
    for name in ("leaderboard.md", "leaderboard.csv"):  # verdicts are kept, so no figure moves
        got = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert got == (FIX / "expected" / name).read_text(encoding="utf-8")


def test_committed_predictions_hold_no_rjudge_text() -> None:
    """R-Judge has no licence: a committed predictions file keeps ids and verdicts for its
    points, never the judge's raw output or reason (which can quote the trajectory)."""
    import subprocess

    from bench.core.paths import GROUND_TRUTH, REPO_ROOT
    from bench.report.inputs import load_ground_truth
    from bench.report.publish import unwithheld_lines

    try:
        tracked = subprocess.run(
            ["git", "ls-files", "leaderboards/predictions"],
            cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=60,
        ).stdout.split()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: nothing committed to check")
    files = [REPO_ROOT / t for t in tracked if t.endswith(".jsonl")]
    if not files:
        pytest.skip("no committed predictions files")
    _, meta = load_ground_truth(GROUND_TRUTH)
    assert unwithheld_lines(files, meta) == {}, (
        "run python bench/leaderboard.py --withhold-raw before committing predictions"
    )
