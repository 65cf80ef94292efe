"""The ``openai`` judge end to end through ``bench/decide.py`` against the mock server: a fault run
(none lost, none duplicated, every server request accounted for) and SIGKILL-and-resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fakes.mockserver import MockConfig, MockServer

from bench import decide
from bench.core.labels import GoldLabel
from bench.core.schema import Action, DecisionPoint, Policy, Turn
from bench.judging import predictions, runner

VERSION = "v-openai-e2e"


def write_build(root: Path, n: int) -> list[str]:
    """A tiny built dataset (``<root>/<version>/decision_points.jsonl`` + LATEST); returns ids."""
    folder = root / VERSION
    folder.mkdir(parents=True)
    ids = []
    with (folder / "decision_points.jsonl").open("w", encoding="utf-8") as f:
        for i in range(n):
            dp = DecisionPoint(
                id=f"e2e:t{i:04d}:2",
                trajectory_id=f"e2e:t{i:04d}",
                source="e2e",
                k=2,
                policy=Policy(task=f"clean up workspace {i}"),
                history=(Turn(role="user", content=f"please clean workspace {i}"),),
                thought="delete the temporary files",
                action=Action(text=f"rm -rf /tmp/ws{i}/cache"),
                gold=GoldLabel(act="CONTINUE", phase="safe"),
            )
            row = {**dp.to_dict(), "split": "test" if i % 2 else "dev", "disputed": False}
            f.write(json.dumps(row) + "\n")
            ids.append(dp.id)
    (root / "LATEST").write_text(VERSION + "\n", encoding="utf-8")
    return ids


def write_judges(path: Path, url: str, concurrency: int, timeout_s: float) -> Path:
    path.write_text(
        f"""
[[judge]]
id = "mock-api"
display_name = "Mock API judge"
backend = "openai"
model = "mock-model"
prompt = "auditor"
parser = "boxed"
concurrency = {concurrency}

[judge.params]
base_url = "{url}"
timeout_s = {timeout_s}
max_tokens = 64
""",
        encoding="utf-8",
    )
    return path


def args(tmp: Path) -> list[str]:
    return [
        "--judges",
        str(tmp / "judges.toml"),
        "--build-dir",
        str(tmp / "build"),
        "--out",
        str(tmp / "out"),
        "--split",
        "all",
        "--quiet",
    ]


def the_file(tmp: Path) -> Path:
    files = list((tmp / "out" / "mock-api" / VERSION).glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def decisions(path: Path) -> list[dict]:
    return [r for r in predictions.read_lines(path) if r.get("type") == "decision"]


@pytest.mark.timeout(60)
def test_fault_run_none_lost_none_duplicated(tmp_path: Path) -> None:
    ids = write_build(tmp_path / "build", 200)
    cfg = MockConfig(
        latency=0.01, p500=0.10, p429=0.05, p_timeout=0.02, retry_after="0.05", seed=11
    )
    with MockServer(cfg) as srv:
        write_judges(tmp_path / "judges.toml", srv.url, concurrency=16, timeout_s=0.5)
        t0 = time.perf_counter()
        assert decide.main(args(tmp_path)) == 0
        elapsed = time.perf_counter() - t0
        st = srv.stats()
    path = the_file(tmp_path)
    rows = decisions(path)
    per_id = Counter(r["id"] for r in rows)
    assert set(per_id) == set(ids), "lost or unknown ids"
    assert max(per_id.values()) == 1, "an id was written twice"
    # every request the server saw is one attempt recorded in that id's row, and vice versa
    assert {r["id"]: r["attempts"] for r in rows} == st["counts"]
    # the faults really happened and were retried
    assert st["outcomes"]["500"] > 5 and st["outcomes"]["429"] > 2 and st["outcomes"]["hang"] > 0
    assert sum(r["attempts"] > 1 for r in rows) > 10
    for r in rows:
        assert r["status"] in ("ok", "error")
        if r["status"] == "ok":
            assert r["act"] in ("CONTINUE", "ASK", "STOP") and r["tokens_in"] and r["tokens_out"]
        else:
            assert r["attempts"] == runner.RetryPolicy().max_attempts and r["error"]
    kinds = [r["type"] for r in predictions.read_lines(path)]
    assert kinds[0] == "run" and kinds[-1] == "run_end"
    assert elapsed < 40


@pytest.mark.timeout(90)
def test_sigkill_mid_run_then_resume(tmp_path: Path) -> None:
    n, conc = 60, 4
    ids = write_build(tmp_path / "build", n)
    with MockServer(MockConfig(latency=0.15)) as srv:
        write_judges(tmp_path / "judges.toml", srv.url, concurrency=conc, timeout_s=10)
        cmd = [sys.executable, "bench/decide.py", *args(tmp_path)]
        root = Path(decide.__file__).resolve().parents[1]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 30
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                files = list((tmp_path / "out").rglob("*.jsonl"))
                if files and len(decisions(files[0])) >= 12:
                    break
                time.sleep(0.05)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            _, err = proc.communicate(timeout=10)
        assert proc.returncode == -signal.SIGKILL, (
            f"decide.py ended before the kill: {err[-2000:]!r}"
        )
        before = decisions(the_file(tmp_path))  # what survived the kill
        done_before = {r["id"] for r in before if r["status"] != "error"}
        assert 12 <= len(done_before) < n
        counts_at_kill = srv.counts()

        r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr[-2000:]
        counts = srv.counts()

    rows = decisions(the_file(tmp_path))
    last = predictions.latest(the_file(tmp_path))
    assert set(last) == set(ids) and all(v["status"] == "ok" for v in last.values())
    per_id = Counter(row["id"] for row in rows)
    assert max(per_id.values()) == 1, "a finished decision was written again"
    # finished rows were not re-requested; only the decisions in flight at the kill were
    assert all(counts[i] == 1 for i in done_before)
    in_flight = {i for i in counts_at_kill if i not in done_before}
    assert len(in_flight) <= conc
    assert all(counts[i] == 2 for i in in_flight)
    assert all(counts[i] == 1 for i in ids if i not in done_before and i not in in_flight)
    runs = [row for row in predictions.read_lines(the_file(tmp_path)) if row.get("type") == "run"]
    assert len(runs) == 2 and runs[1]["cached"] == len(done_before)
