"""I/O errors are sentences (issue 25): a full disk (ENOSPC), a refused permission (EACCES) and a
read-only folder (EROFS) in extract, build, decide and leaderboard each give ONE line on stderr
naming the path and what was saved, exit status 74, and no traceback.

The errors are injected (the tests run as root, where chmod refuses nothing): ``refuse`` makes
every file opened for writing under one folder fail, at open (EACCES, EROFS: as a read-only
folder does) or at its N-th write after writing half of it (ENOSPC: a disk filling up mid-line).
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from decide_support import write_build
from test_build import corpus, setup
from test_leaderboard import FIX
from test_leaderboard import args as lb_args

from bench import build, decide, extract, leaderboard
from bench.core.ioerrors import EXIT_IO, sentence
from bench.core.script import run
from bench.judging import predictions

ERRNOS = [errno.ENOSPC, errno.EACCES, errno.EROFS]
REASON = {
    errno.ENOSPC: "no space left on device",
    errno.EACCES: "permission denied",
    errno.EROFS: "read-only file system",
}


@dataclass
class Refusal:
    """Writes under ``root`` fail with ``err``: at open, or at write number ``after``."""

    root: Path
    err: int
    after: int = 0
    writes: int = 0
    active: bool = True
    """False: the disk has room again (every write goes through)."""

    @property
    def at_open(self) -> bool:
        return self.err != errno.ENOSPC

    def under(self, path: Any) -> bool:
        if not self.active:
            return False
        try:
            return Path(os.fsdecode(path)).resolve().is_relative_to(self.root.resolve())
        except (TypeError, ValueError):
            return False

    def fail(self, path: Any = None) -> OSError:
        return OSError(self.err, os.strerror(self.err), *([str(path)] if path else []))


class Failing:
    """A file whose ``after``-th write writes half its data, then fails like a full disk."""

    def __init__(self, f: Any, refusal: Refusal) -> None:
        self._f, self._r = f, refusal

    def write(self, data: Any) -> int:
        self._r.writes += 1
        if self._r.active and self._r.writes >= self._r.after:
            self._f.write(data[: len(data) // 2])
            self._f.flush()
            raise self._r.fail()  # a failed write(2) names no file
        return self._f.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> Failing:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._f)


@pytest.fixture
def refuse(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``refuse(root, err, after=1)``: from now on, writes under ``root`` fail (module doc)."""

    def install(root: Path, err: int, after: int = 1) -> Refusal:
        r = Refusal(root, err, after)
        real_open, real_os_open, real_mkdir = io.open, os.open, os.mkdir

        def fake_open(file: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
            writing = any(c in mode for c in "wax+")
            if not writing or isinstance(file, int) or not r.under(file):
                return real_open(file, mode, *a, **k)
            if r.at_open:
                raise r.fail(file)
            return Failing(real_open(file, mode, *a, **k), r)

        def fake_os_open(path: Any, flags: int, *a: Any, **k: Any) -> int:
            writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            if writes and r.at_open and r.under(path):
                raise r.fail(path)
            return real_os_open(path, flags, *a, **k)

        def fake_mkdir(path: Any, *a: Any, **k: Any) -> None:
            if r.at_open and r.under(path) and not os.path.exists(path):
                raise r.fail(path)
            real_mkdir(path, *a, **k)

        monkeypatch.setattr(io, "open", fake_open)
        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(os, "open", fake_os_open)
        monkeypatch.setattr(os, "mkdir", fake_mkdir)
        return r

    return install


def one_line(capsys: pytest.CaptureFixture[str], err: int) -> str:
    """The single stderr line a refused write gave (no traceback)."""
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and REASON[err] in lines[0]
    assert "Traceback" not in lines[0]
    return lines[0]


def test_sentence_names_the_path_saved_and_fix() -> None:
    e = OSError(errno.ENOSPC, "No space left on device")
    saved = "638 decisions saved in /p/x.jsonl"
    line = sentence(e, path="/p/x.jsonl", saved=saved, resume=True, path_in_saved=True)
    assert line == (
        "no space left on device; 638 decisions saved in /p/x.jsonl; free space and rerun to resume"
    )
    e = OSError(errno.EROFS, "Read-only file system", "/srv/out/t.md")
    assert sentence(e).startswith("/srv/out/t.md: read-only file system; remount /srv/out ")
    assert "the OS did not say" in sentence(OSError(errno.EACCES, "Permission denied"))


# ------------------------------------------------------------------------------------ decide


def _decide_argv(tmp_path: Path) -> list[str]:
    (tmp_path / "quick_judge.py").write_text(
        "def judge(item):\n    return '\\\\boxed{act:STOP, risk:90, fail:NONE, harm:NONE, "
        "src:NONE, cite:NONE}'\n"
    )
    (tmp_path / "judges.toml").write_text(
        '[[judge]]\nid = "quick"\nbackend = "python"\nprompt = "auditor"\nparser = "boxed"\n'
        f'params = {{ callable = "quick_judge:judge", path = "{tmp_path}" }}\n'
    )
    write_build(tmp_path / "build", n=20)
    return ["--judges", str(tmp_path / "judges.toml"), "--build-dir", str(tmp_path / "build"),
            "--out", str(tmp_path / "preds"), "--split", "all", "--quiet"]  # fmt: skip


def test_decide_on_a_full_disk_says_what_was_saved_and_resumes(
    tmp_path: Path, refuse: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _decide_argv(tmp_path)
    assert run(decide.main, [*argv, "--limit", "3"]) == 0
    (path,) = (tmp_path / "preds").glob("quick/*/*.jsonl")
    capsys.readouterr()
    full = refuse(tmp_path / "preds", errno.ENOSPC, after=6)  # run line, 4 decisions, full
    assert run(decide.main, argv) == EXIT_IO
    line = one_line(capsys, errno.ENOSPC)
    assert line == (
        f"error: no space left on device; 7 decisions saved in {path}; "
        "free space and rerun to resume"
    )
    assert not path.read_bytes().endswith(b"\n")  # the torn half line the disk took
    assert not (path.parent / (path.name + ".lock")).exists()

    full.active = False
    assert run(decide.main, argv) == 0  # space freed: the rerun repairs the line and finishes
    ids = Counter(r["id"] for r in predictions.read_lines(path) if r["type"] == "decision")
    assert len(ids) == 20 and set(ids.values()) == {1}  # nothing redone
    assert [r for r in predictions.read_lines(path) if r["type"] == "run"][-1]["cached"] == 7


@pytest.mark.parametrize("err", [errno.EACCES, errno.EROFS])
def test_decide_in_a_folder_it_cannot_write(
    tmp_path: Path, refuse: Any, capsys: pytest.CaptureFixture[str], err: int
) -> None:
    argv = _decide_argv(tmp_path)
    assert run(decide.main, [*argv, "--limit", "3"]) == 0
    (path,) = (tmp_path / "preds").glob("quick/*/*.jsonl")
    before = path.read_bytes()
    capsys.readouterr()
    refuse(tmp_path / "preds", err)
    assert run(decide.main, argv) == EXIT_IO
    line = one_line(capsys, err)
    assert f"3 decisions saved in {path}" in line and line.endswith("and rerun to resume")
    assert str(path.parent) in line
    assert path.read_bytes() == before


# ----------------------------------------------------------------------------------- extract


@pytest.mark.parametrize("err", ERRNOS)
def test_extract_says_the_previous_extraction_is_unchanged(
    tmp_path: Path, refuse: Any, capsys: pytest.CaptureFixture[str], err: int
) -> None:
    out = tmp_path / "extract"
    assert run(extract.main, ["--source", "sample", "--out", str(out), "--quiet"]) == 0
    before = {p.name: p.read_bytes() for p in (out / "sample").iterdir()}
    capsys.readouterr()
    refuse(out, err, after=3)
    assert run(extract.main, ["--source", "sample", "--out", str(out), "--quiet"]) == EXIT_IO
    line = one_line(capsys, err)
    assert f"sample's previous extraction in {out / 'sample'} is unchanged" in line
    assert str(out) in line and line.endswith("and rerun")
    assert {p.name: p.read_bytes() for p in (out / "sample").iterdir()} == before
    assert sorted(p.name for p in out.iterdir()) == ["sample"]  # no temporary folder left


# ------------------------------------------------------------------------------------- build


@pytest.mark.parametrize("err", ERRNOS)
def test_build_says_nothing_was_replaced(
    tmp_path: Path, refuse: Any, capsys: pytest.CaptureFixture[str], err: int
) -> None:
    p = setup(tmp_path, corpus(12))
    argv = ["--source", "sample", "--work", str(p["work"]), "--out", str(p["out"]),
            "--labels", str(p["labels"]), "--reviews", str(p["reviews"]),
            "--ground-truth", str(p["gt"]), "--no-gates", "--quiet"]  # fmt: skip
    assert run(build.main, argv) == 0
    version = (p["out"] / "LATEST").read_text().strip()
    capsys.readouterr()
    # a changed corpus, so the rebuild would write a new version
    p = setup(tmp_path, corpus(14))
    refuse(p["out"], err, after=1)
    assert run(build.main, argv) == EXIT_IO
    line = one_line(capsys, err)
    assert f"nothing was replaced: {p['out'] / 'LATEST'} still names {version}" in line
    assert str(p["out"]) in line
    assert (p["out"] / "LATEST").read_text().strip() == version


# ------------------------------------------------------------------------------- leaderboard


@pytest.mark.parametrize(
    "err",
    [
        errno.ENOSPC,
        errno.EACCES,
        errno.EROFS,
    ],
)
def test_leaderboard_gives_one_line(
    tmp_path: Path, refuse: Any, capsys: pytest.CaptureFixture[str], err: int
) -> None:
    out = tmp_path / "lb"
    out.mkdir()
    refuse(out, err, after=1)
    assert run(leaderboard.main, lb_args(FIX / "ground_truth.jsonl", FIX / "predictions", out)) == (
        EXIT_IO
    )
    line = one_line(capsys, err)
    assert str(out) in line and "rerun" in line
    if err == errno.ENOSPC:
        assert "unchanged" in line


def test_other_os_errors_keep_their_traceback() -> None:
    def boom(argv: list[str] | None) -> int:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError):
        run(boom, [])


def test_json_line_is_still_valid_after_the_repair(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"type": "run"}\n{"type": "deci')
    with predictions.Writer(path) as w:
        w.write({"type": "run_end"})
    assert [json.loads(x)["type"] for x in path.read_text().splitlines()] == ["run", "run_end"]
