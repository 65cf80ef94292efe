"""Inspect AI in and out: the benchmark as an Inspect task run against the mock OpenAI-compatible
server (Inspect's ``openai-api`` provider; its ``mockllm`` needs a download), the log imported as
a predictions file, and the leaderboard ranking the imported judge."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")
pytest.importorskip("openai")

from fakes.mockserver import MockConfig, MockServer  # noqa: E402

from bench import inspect_import, leaderboard, pipeline  # noqa: E402
from bench.core.errors import BenchError, DataError  # noqa: E402

MODEL = "openai-api/mock/mock-model"


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("inspect")
    assert pipeline.main(["--out", str(out), "--judge", "keywords", "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def server() -> Any:
    with MockServer(MockConfig()) as srv:
        yield srv


def run_eval(flow: Path, server: Any, log_dir: Path, **task_args: Any) -> Path:
    from inspect_ai import eval as inspect_eval

    from bench.interop.inspect_task import foresight

    os.environ["MOCK_API_KEY"] = "not-a-secret"
    logs = inspect_eval(
        foresight(build_dir=str(flow / "build"), **task_args),
        model=MODEL,
        model_base_url=server.url,
        log_dir=str(log_dir),
        display="none",
    )
    assert logs[0].status == "success"
    return Path(logs[0].location)


def test_eval_import_and_rank(flow: Path, server: Any, tmp_path: Path) -> None:
    log = run_eval(flow, server, tmp_path / "logs", split="test")
    from inspect_ai.log import read_eval_log

    samples = read_eval_log(str(log)).samples or []
    statuses = {s.scores["verdict_scorer"].metadata["status"] for s in samples}
    assert samples and "ok" in statuses and statuses <= {"ok", "partial"}
    preds = tmp_path / "preds"
    shutil.copytree(flow / "leaderboards" / "predictions", preds)
    gt = flow / "leaderboards" / "ground_truth.jsonl"
    argv = [str(log), "--judge", "mock-inspect", "--out", str(preds), "--ground-truth", str(gt)]
    assert inspect_import.main([*argv, "--quiet"]) == 0
    [f] = (preds / "mock-inspect").glob("*/*.jsonl")
    lines = [json.loads(x) for x in f.read_text().splitlines()]
    assert lines[0]["type"] == "run" and lines[0]["config"]["backend"] == "inspect"
    assert lines[0]["config"]["model"] == MODEL and lines[0]["inspect"]["split"] == "test"
    decisions = [x for x in lines if x["type"] == "decision"]
    assert len(decisions) == len(samples)
    assert all(
        d["act"] in ("CONTINUE", "ASK", "STOP")
        and d["raw"].startswith("\\boxed")
        or "boxed" in d["raw"]
        for d in decisions
    )
    assert all(d["tokens_in"] and d["latency_s"] is not None for d in decisions)
    out = tmp_path / "lb"
    lb = ["--ground-truth", str(gt), "--predictions", str(preds), "--judges", str(tmp_path / "none.toml"),
          "--out", str(out), "--quiet"]  # fmt: skip
    assert leaderboard.main(lb) == 0
    report = json.loads((out / "leaderboard.json").read_text())
    assert "mock-inspect" in {e["id"] for e in report["judges"]}  # ranked like any other


def test_a_partial_log_is_incomplete_and_another_version_is_refused(
    flow: Path, server: Any, tmp_path: Path
) -> None:
    log = run_eval(flow, server, tmp_path / "logs", split="test", limit=5)
    preds = tmp_path / "preds"
    gt = flow / "leaderboards" / "ground_truth.jsonl"
    argv = [str(log), "--judge", "short", "--out", str(preds), "--ground-truth", str(gt), "--quiet"]
    assert inspect_import.main(argv) == 0
    out = tmp_path / "lb"
    lb = ["--ground-truth", str(gt), "--predictions", str(preds), "--judges", str(tmp_path / "x"),
          "--out", str(out), "--quiet"]  # fmt: skip
    assert leaderboard.main(lb) == 0
    report = json.loads((out / "leaderboard.json").read_text())
    assert report["judges"] == [] and report["incomplete"][0]["id"] == "short"
    assert report["incomplete"][0]["covered"] == 5
    from bench.interop.inspect_log import import_log

    with pytest.raises(DataError, match="made for dataset version"):
        import_log(log, "short", tmp_path / "other", "vnot-this-one")


def test_rjudge_points_need_their_raw_data(
    flow: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.interop.inspect_task import samples

    monkeypatch.setenv("FORESIGHT_DATA", str(tmp_path))  # no r-judge/ here
    with pytest.raises(BenchError, match="only be evaluated where its raw data is"):
        samples(split="test", source="rjudge", build_dir=str(flow / "build"))
    version, items = samples(split="lite", template="json", build_dir=str(flow / "build"))
    assert items and all(i.metadata["parser"] == "json" for i in items)
    assert all(i.metadata["dataset_version"] == version for i in items)


def test_the_inspect_command_line(flow: Path, server: Any, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "MOCK_API_KEY": "x"}
    cmd = [sys.executable, "-m", "inspect_ai", "eval", "bench/interop/inspect_task.py", "--model", MODEL,
           "--model-base-url", server.url, "-T", "split=test", "-T", f"build_dir={flow / 'build'}",
           "-T", "limit=3", "--log-dir", str(tmp_path / "logs"), "--display", "none"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((tmp_path / "logs").glob("*.eval"))


def test_generation_settings_are_part_of_the_config() -> None:
    from inspect_ai.model import GenerateConfig

    from bench.interop.inspect_log import generate_settings, spec_for

    hot = generate_settings(GenerateConfig(temperature=0.7, max_tokens=64, max_retries=3))
    assert hot == {"temperature": 0.7, "max_tokens": 64}  # retries cannot change an answer
    assert generate_settings(GenerateConfig()) == {}
    plain = spec_for("j", MODEL, "auditor", "boxed", None, {})
    warm = spec_for("j", MODEL, "auditor", "boxed", None, hot)
    assert plain.config_hash("t") != warm.config_hash("t")
    with pytest.raises(DataError, match="params.generate"):
        spec_for("j", MODEL, "auditor", "boxed", plain, hot)
    assert spec_for("j", MODEL, "auditor", "boxed", warm, hot) is warm


def test_import_takes_the_predictions_lock_and_waits_with_wait(
    flow: Path, server: Any, tmp_path: Path
) -> None:
    import threading

    from test_locks import holder, release

    from bench.core.errors import LockedError

    log = run_eval(flow, server, tmp_path / "logs", split="test", limit=3)
    preds = tmp_path / "preds"
    gt = flow / "leaderboards" / "ground_truth.jsonl"
    argv = [str(log), "--judge", "locked", "--out", str(preds), "--ground-truth", str(gt), "--quiet"]
    assert inspect_import.main(argv) == 0
    [f] = (preds / "locked").glob("*/*.jsonl")
    first = f.read_text()
    with holder(f) as proc:  # another process appends to the same file
        with pytest.raises(LockedError, match=f"pid {proc.pid}.*--wait"):
            inspect_import.main(argv)
        assert f.read_text() == first  # refused before writing anything
        threading.Timer(0.5, release, args=(proc,)).start()
        assert inspect_import.main([*argv, "--wait"]) == 0  # waited for the holder, then wrote
    assert f.read_text().startswith(first) and len(f.read_text()) > len(first)
