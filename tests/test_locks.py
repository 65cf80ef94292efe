"""One writer per predictions file (issue 25): the lock, its refusal, --wait and stale takeover.

The other holder is a real second process (a lock is re-entrant within one process), started
with ``holder`` and released by closing its stdin."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from decide_support import write_build

from bench import decide
from bench.core.errors import LockedError
from bench.core.lock import FileLock, Holder, lock_path
from bench.core.paths import REPO_ROOT
from bench.core.script import run
from bench.judging import predictions
from bench.report.inputs import discover

HOLD = """
import sys
from bench.core.lock import FileLock
with FileLock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextmanager
def holder(target: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``target``'s lock until the block ends (or ``release``)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        release(proc)


def release(proc: subprocess.Popen[str]) -> None:
    """Let the holder end (closing its stdin) and wait for it."""
    if proc.stdin and not proc.stdin.closed:
        proc.stdin.close()
    proc.wait(30)


def test_a_second_holder_is_refused_naming_pid_host_and_start(tmp_path: Path) -> None:
    target = tmp_path / "j" / "v" / "abc.jsonl"
    with holder(target) as proc:
        rec = Holder.parse(lock_path(target).read_text())
        assert rec is not None and rec.pid == proc.pid and rec.host == socket.gethostname()
        with pytest.raises(LockedError) as e:
            FileLock(target, hint="add --wait to wait for it instead").acquire()
        msg = str(e.value)
        assert f"pid {proc.pid}" in msg and socket.gethostname() in msg and rec.since in msg
        assert "--wait" in msg and "\n" not in msg
        # a writer (decide, Jobs collect and inspect_import all append through one) is refused too
        with pytest.raises(LockedError):
            predictions.Writer(target)
    # released: the lock file is gone and the lock is free
    assert not lock_path(target).exists()
    with FileLock(target):
        assert Holder.parse(lock_path(target).read_text()).pid == os.getpid()  # type: ignore[union-attr]
    assert not lock_path(target).exists()


def test_wait_blocks_until_the_holder_ends(tmp_path: Path) -> None:
    target = tmp_path / "abc.jsonl"
    with holder(target) as proc:
        threading.Timer(0.5, release, args=(proc,)).start()
        with FileLock(target, wait=True, poll_s=0.05, timeout_s=60):
            assert proc.stdin is not None and proc.stdin.closed  # only once told to release
    with holder(target), pytest.raises(LockedError, match="still held after"):
        FileLock(target, wait=True, poll_s=0.01, timeout_s=0.05).acquire()


def test_the_lock_is_reentrant_within_a_process(tmp_path: Path) -> None:
    target = tmp_path / "abc.jsonl"
    with FileLock(target), predictions.Writer(target) as w:
        w.write({"type": "run"})
        assert lock_path(target).exists()
    assert not lock_path(target).exists() and target.read_text() == '{"type": "run"}\n'


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize(
    "record, why",
    [
        ({"pid": "dead", "boot": ""}, "that process is gone"),
        ({"pid": os.getppid(), "boot": "an-earlier-boot"}, "rebooted"),
        ({"pid": os.getppid(), "boot": ""}, "reused"),
        ("not json", "unreadable"),
    ],
)
def test_a_stale_lock_is_taken_over_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, record: object, why: str
) -> None:
    target = tmp_path / "abc.jsonl"
    if isinstance(record, dict):
        pid = _dead_pid() if record["pid"] == "dead" else record["pid"]
        text = json.dumps(
            {"pid": pid, "host": socket.gethostname(), "since": "2026-01-01T00:00:00+00:00"}
            | ({"boot": record["boot"]} if record["boot"] else {})
        )
    else:
        text = str(record)
    lock_path(target).write_text(text)
    with caplog.at_level(logging.WARNING, logger="bench.core.lock"), FileLock(target):
        assert Holder.parse(lock_path(target).read_text()).pid == os.getpid()  # type: ignore[union-attr]
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"took over the stale lock {lock_path(target)}") and why in line


def test_an_empty_leftover_lock_file_is_taken_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "abc.jsonl"
    lock_path(target).write_text("")
    with caplog.at_level(logging.WARNING), FileLock(target):
        pass
    assert not caplog.records


def test_lock_files_are_git_ignored_and_never_scanned_as_predictions(tmp_path: Path) -> None:
    pred = tmp_path / "predictions"
    f = pred / "judge-a" / "v1" / "abc.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text(
        json.dumps({"type": "run", "judge": "judge-a", "dataset_version": "v1"})
        + "\n"
        + json.dumps({"type": "decision", "id": "x:1:1", "status": "ok", "act": "STOP"})
        + "\n"
    )
    lock_path(f).write_text(f.read_text())  # a lock file that would parse, were it scanned
    chosen, refused, superseded = discover(pred, "v1", cache=False)
    assert list(chosen) == ["judge-a"] and chosen["judge-a"].rel.endswith("abc.jsonl")
    assert refused == [] and superseded == []
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("no git checkout")
    rel = "leaderboards/predictions/judge-a/v1/abc.jsonl.lock"
    r = subprocess.run(["git", "check-ignore", "-q", rel], cwd=REPO_ROOT, check=False)
    assert r.returncode == 0, f"{rel} is not git-ignored: add '*.jsonl.lock' to .gitignore"


# ------------------------------------------------------------------------ decide.py, two runs


JUDGES = """
[[judge]]
id = "quick"
backend = "python"
prompt = "auditor"
parser = "boxed"
params = {{ callable = "quick_judge:judge", path = "{path}" }}
"""

QUICK = """
def judge(item):
    return "\\\\boxed{act:CONTINUE, risk:5, fail:NONE, harm:NONE, src:NONE, cite:NONE}"
"""


def _decide_env(tmp_path: Path) -> list[str]:
    (tmp_path / "quick_judge.py").write_text(QUICK)
    (tmp_path / "judges.toml").write_text(JUDGES.format(path=tmp_path))
    write_build(tmp_path / "build", n=12)
    return ["--judges", str(tmp_path / "judges.toml"), "--build-dir", str(tmp_path / "build"),
            "--out", str(tmp_path / "preds"), "--split", "all", "--quiet"]  # fmt: skip


def test_a_second_decide_is_refused_then_allowed_with_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _decide_env(tmp_path)
    assert run(decide.main, [*argv, "--limit", "4"]) == 0
    (path,) = (tmp_path / "preds").glob("quick/*/*.jsonl")
    capsys.readouterr()
    with holder(path) as proc:
        assert run(decide.main, argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"pid {proc.pid} on {socket.gethostname()} since" in err[0]
        assert "--wait" in err[0] and str(path) in err[0]
        assert len(predictions.latest(path)) == 4  # the refused run wrote nothing

        threading.Timer(0.5, release, args=(proc,)).start()
        assert run(decide.main, [*argv, "--wait"]) == 0
        assert proc.stdin is not None and proc.stdin.closed  # it judged after the release
    ids = Counter(r["id"] for r in predictions.read_lines(path) if r["type"] == "decision")
    assert len(ids) == 12 and set(ids.values()) == {1}
    assert not lock_path(path).exists()


def test_jobs_collect_merges_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--collect appends under the same lock: refused while a run writes the file, and with
    --wait it merges once that run has ended (the hub side is faked at collect's helpers)."""
    from argparse import Namespace
    from types import SimpleNamespace

    from bench.jobs import collect

    plan = SimpleNamespace(config_hash="h1", dataset_version="v1", shards=1)
    shard = [{"type": "decision", "id": "x:1:1", "status": "ok", "act": "STOP"}]
    monkeypatch.setattr(collect, "config_hash", lambda spec: "h1")
    monkeypatch.setattr(
        collect, "list_folder", lambda *a: [SimpleNamespace(path="predictions/j/v1/plan.json")]
    )
    monkeypatch.setattr(collect, "fetch_plan", lambda *a: plan)
    monkeypatch.setattr(collect, "check_all", lambda *a: ([], {0: (shard, "blob-0")}))
    monkeypatch.setattr(collect, "shard_lines_for_merge", lambda lines, p, k, blob: lines)
    api = SimpleNamespace(dataset_info=lambda repo: SimpleNamespace(sha="rev"))
    spec = SimpleNamespace(id="j")
    path = predictions.path_for(tmp_path, "j", "v1", "h1")

    def args(wait: bool) -> Namespace:
        return Namespace(results_repo="org/results", version=None, out=tmp_path, wait=wait)

    with holder(path) as proc:
        with pytest.raises(LockedError, match=f"pid {proc.pid}"):
            collect.collect_one(api, spec, args(False), tmp_path / "dl")  # type: ignore[arg-type]
        assert not path.exists()
        threading.Timer(0.5, release, args=(proc,)).start()
        (res,) = collect.collect_one(api, spec, args(True), tmp_path / "dl")  # type: ignore[arg-type]
        assert proc.stdin is not None and proc.stdin.closed
    assert res.merged == (0,) and list(predictions.latest(path)) == ["x:1:1"]
