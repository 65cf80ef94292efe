"""SIGINT and SIGTERM during decide.py (issue 25): the decisions in hand are written, the summary
says "interrupted: N done; rerun to resume", the exit status is 128 + the signal, and the next
run redoes nothing that finished.

decide.py runs as a real subprocess over a slow python-callable judge (async or batched); the
signal is sent once a few decision lines are in the file. Every wait is bounded."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from decide_support import write_build

from bench.core.lock import lock_path
from bench.core.paths import REPO_ROOT
from bench.judging import predictions

N = 40

SLOW = """
import asyncio, time

def called(log, items):
    with open(log, "a") as f:
        f.writelines(i.dp.id + "\\n" for i in items)

async def slow(item, log):
    called(log, [item])
    await asyncio.sleep(0.05)
    return "\\\\boxed{act:STOP, risk:90, fail:NONE, harm:NONE, src:NONE, cite:NONE}"

def slow_batch(items, log):
    called(log, items)
    time.sleep(0.05 * len(items))
    return ["\\\\boxed{act:ASK, risk:60, fail:NONE, harm:NONE, src:NONE, cite:NONE}"] * len(items)
"""

ROW = """
[[judge]]
id = "slow"
backend = "python"
prompt = "auditor"
parser = "boxed"
concurrency = 3
batch_size = 3
params = {{ callable = "slow_judge:{fn}", path = "{path}", kwargs = {{ log = "{path}/calls" }}{extra} }}
"""


def _env(tmp_path: Path, fn: str) -> list[str]:
    (tmp_path / "slow_judge.py").write_text(SLOW)
    extra = ", batched = true" if fn == "slow_batch" else ""
    (tmp_path / "judges.toml").write_text(ROW.format(fn=fn, path=tmp_path, extra=extra))
    write_build(tmp_path / "build", n=N)
    return [sys.executable, str(REPO_ROOT / "bench" / "decide.py"),
            "--judges", str(tmp_path / "judges.toml"), "--build-dir", str(tmp_path / "build"),
            "--out", str(tmp_path / "preds"), "--split", "all", "--quiet"]  # fmt: skip


def _decisions(out: Path) -> list[str]:
    return [
        r["id"]
        for f in out.glob("slow/*/*.jsonl")
        for r in predictions.read_lines(f)
        if r.get("type") == "decision"
    ]


def _interrupt(cmd: list[str], out: Path, sig: int) -> subprocess.CompletedProcess[str]:
    """Start decide, send ``sig`` once at least 5 decisions are in the file, wait for it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_decisions(out)) < 5 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "decide finished before it could be interrupted"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


@pytest.mark.parametrize(
    "fn, sig",
    [("slow", signal.SIGTERM), ("slow", signal.SIGINT), ("slow_batch", signal.SIGTERM)],
)
def test_a_signal_finishes_the_lines_in_hand_and_the_rerun_redoes_nothing(
    tmp_path: Path, fn: str, sig: int
) -> None:
    cmd = _env(tmp_path, fn)
    out = tmp_path / "preds"
    first = _interrupt(cmd, out, sig)
    assert first.returncode == 128 + sig, first.stderr
    assert "Traceback" not in first.stderr
    done = _decisions(out)
    assert 5 <= len(done) < N and len(set(done)) == len(done)
    # every decision the judge was asked for before stopping was written: none lost in flight
    assert sorted((tmp_path / "calls").read_text().split()) == sorted(done)
    assert f"interrupted: {len(done)} done; rerun to resume" in first.stdout
    assert "stopped" in first.stdout  # the summary's state for the judge
    (path,) = out.glob("slow/*/*.jsonl")
    assert not lock_path(path).exists()
    rows = predictions.read_lines(path)
    assert rows[-1]["type"] == "run_end" and rows[-1]["aborted"] == "interrupted; rerun to resume"

    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert second.returncode == 0, second.stderr
    ids = Counter(_decisions(out))
    assert len(ids) == N and set(ids.values()) == {1}  # nothing redone, nothing missing
    calls = Counter((tmp_path / "calls").read_text().split())
    assert len(calls) == N and set(calls.values()) == {1}  # the judge was never asked twice
    redone = [r for r in predictions.read_lines(path) if r.get("type") == "run"][-1]
    assert redone["todo"] == N - len(done) and redone["cached"] == len(done)


def test_the_first_signal_asks_to_stop_a_second_stops_at_once(
    capfd: pytest.CaptureFixture[str],
) -> None:
    import os

    from bench.core.script import Interrupted, Interrupts, run

    before = signal.getsignal(signal.SIGTERM)
    with Interrupts() as stop:
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set() and stop.status == 143
        with pytest.raises(Interrupted) as e:
            os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) == before  # the handlers are put back
    assert "finishing the decisions in hand" in capfd.readouterr().err

    def stopped(argv: list[str] | None) -> int:
        raise e.value

    assert run(stopped, []) == 143
