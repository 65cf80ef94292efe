"""Hostile and careless input: nothing crashes a run, nothing is scored wrong without a trace,
no secret is written. One test (or a few) per case of the hostile-input issue; each asserts the
clear error or the recorded invalid/error, never a crash."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from decide_support import write_build

from bench import decide, extract, leaderboard
from bench.core.errors import ConfigError, DataError
from bench.core.verdict import MAX_RAW_CHARS, Verdict, checked, from_row
from bench.judging import predictions, runner
from bench.judging import specs as judges
from bench.judging.protocol import JudgeInput, RawOutput
from bench.report.check import numeric_diff

# ----------------------------------------------------------------------------- helpers

JUDGE_MODULE = r"""
import asyncio, math, time
from bench.core.verdict import Verdict

BOX = "\\boxed{act:STOP, risk:90, fail:NONE, harm:NONE, src:NONE, cite:NONE}"

def surrogate(item):
    return "I think \ud800 so " + BOX

def lower_act(item):
    return Verdict(status="ok", act="stop", risk=90)

def no_act(item):
    return Verdict(status="ok", act=None)

def string_risk(item):
    return Verdict(status="ok", act="STOP", risk="high")

def nan_risk(item):
    return Verdict(status="ok", act="CONTINUE", risk=float("nan"))

def big_risk(item):
    return Verdict(status="ok", act="ASK", risk=150)

def sleeper(item):
    time.sleep(30)
    return BOX

async def async_sleeper(item):
    await asyncio.sleep(30)
    return BOX

def exits(item):
    raise SystemExit(3)

def huge(item):
    return "x" * 3_000_000 + " " + BOX

def fine(item):
    return BOX
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Path]:
    mod = tmp_path / "mods"
    mod.mkdir()
    (mod / "hostile_judges.py").write_text(JUDGE_MODULE, encoding="utf-8")
    return {"mods": mod, "build": write_build(tmp_path / "build", n=8), "out": tmp_path / "out"}


def py_rows(mods: Path, *fns: str, extra: str = "") -> str:
    return "".join(
        f'[[judge]]\nid = "{fn.replace("_", "-")}"\nbackend = "python"\nprompt = "auditor"\n'
        f'parser = "boxed"\nparams = {{ callable = "hostile_judges:{fn}", path = "{mods}"{extra} }}\n\n'
        for fn in fns
    )


def run_decide(env: dict[str, Path], toml: str, *extra: str) -> int:
    jf = env["out"].parent / "judges.toml"
    jf.write_text(toml, encoding="utf-8")
    argv = ["--judges", str(jf), "--build-dir", str(env["build"]), "--out", str(env["out"])]
    return decide.main([*argv, "--quiet", *extra])


def decisions(env: dict[str, Path], judge: str) -> dict[str, dict[str, Any]]:
    (path,) = env["out"].glob(f"{judge}/*/*.jsonl")
    for line in path.read_bytes().splitlines():  # every line is valid UTF-8 JSON, no NaN
        json.loads(line.decode("utf-8"), parse_constant=lambda c: pytest.fail(f"{c} in {path}"))
    return predictions.latest(path)


def item(i: int = 1) -> JudgeInput:
    from decide_support import points

    return JudgeInput(dp=points(4)[i][0])


# ------------------------------------------------------------------- 1. lone surrogates


def test_surrogate_answer_is_recorded_and_later_judges_still_run(env: dict[str, Path]) -> None:
    rc = run_decide(env, py_rows(env["mods"], "surrogate", "fine"))
    assert rc == 0
    rows = decisions(env, "surrogate")
    assert len(rows) == 4 and {r["act"] for r in rows.values()} == {"STOP"}
    r = next(iter(rows.values()))
    assert "\ufffd" in r["raw"] and "invalid code point" in r["reason"] and r["status"] == "partial"
    assert len(decisions(env, "fine")) == 4  # the judge after it ran


class _Server(ThreadingHTTPServer):
    answers: list[bytes]
    seen: list[dict[str, str]]


class _EchoHandler(BaseHTTPRequestHandler):
    def log_message(self, *a: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        srv: Any = self.server
        self.rfile.read(int(self.headers.get("content-length", 0)))
        srv.seen.append(dict(self.headers))
        body = srv.answers[min(len(srv.seen), len(srv.answers)) - 1]
        auth = self.headers.get("authorization", "")
        body = body.replace(b"$AUTH", auth.encode())
        status = 401 if b"unauthorized" in body else 200
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _EchoHandler)
    srv.answers, srv.seen = [], []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def openai_row(url: str, extra: str = "") -> str:
    return (
        f'[[judge]]\nid = "api"\nbackend = "openai"\nmodel = "m"\nprompt = "auditor"\n'
        f'parser = "boxed"\nparams = {{ base_url = "{url}", api_key_env = "HOSTILE_KEY"{extra} }}\n'
    )


def test_openai_answer_with_a_lone_surrogate_escape_is_recorded(
    env: dict[str, Path], server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = r"\\boxed{act:ASK, risk:60, fail:NONE, harm:NONE, src:NONE, cite:NONE}"
    server.answers = [b'{"choices":[{"message":{"content":"\\ud83d ' + box.encode() + b'"}}]}']
    monkeypatch.setenv("HOSTILE_KEY", "k" * 12)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    assert run_decide(env, openai_row(url)) == 0
    rows = decisions(env, "api")
    assert len(rows) == 4 and all(r["act"] == "ASK" and "\ufffd" in r["raw"] for r in rows.values())


def sample_corpus(tmp_path: Path) -> Path:
    src = Path(__file__).resolve().parents[1] / "data" / "sample" / "cases"
    folder = tmp_path / "sample"
    shutil.copytree(src, folder / "cases")
    return folder


def case_files(folder: Path) -> list[Path]:
    return sorted((folder / "cases").glob("*.yaml"))


def test_extract_rejects_a_record_with_a_lone_surrogate(tmp_path: Path) -> None:
    folder = sample_corpus(tmp_path)
    files = case_files(folder)
    doc = yaml.safe_load(files[3].read_text(encoding="utf-8"))
    doc["policy"]["task"] += " \ud800"
    dumped = yaml.safe_dump(doc)  # YAML escapes it: "\uD800", which loads back as the surrogate
    assert "\\uD800" in dumped
    files[3].write_text(dumped, encoding="utf-8")
    lines = files
    out = tmp_path / "ex"
    assert (
        extract.main(["--source", "sample", "--path", str(folder), "--out", str(out), "--quiet"])
        == 0
    )
    rejects = [json.loads(x) for x in (out / "sample" / "rejects.jsonl").read_text().splitlines()]
    assert len(rejects) == 1 and "lone surrogate" in rejects[0]["reason"]
    assert rejects[0]["position"] == 3
    summary = json.loads((out / "sample" / "summary.json").read_text())
    assert summary["trajectories"] == len(lines) - 1 and summary["rejects"] == 1
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_write_jsonl_leaves_no_temp_file_on_a_bad_row(tmp_path: Path) -> None:
    from bench.core.jsonl import write_jsonl

    p = tmp_path / "x.jsonl"
    write_jsonl(p, [{"a": 1}])
    with pytest.raises(UnicodeEncodeError):
        write_jsonl(p, [{"a": 2}, {"a": "\ud800"}])
    assert p.read_text() == '{"a": 1}\n' and not (tmp_path / "x.jsonl.tmp").exists()


def test_writer_never_loses_a_row_it_cannot_encode(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    with predictions.Writer(p) as w:
        w.write({"type": "run", "note": "bad \udfff", "x": float("nan")})
    row = json.loads(p.read_text(encoding="utf-8"))
    assert row == {"type": "run", "note": "bad \ufffd", "x": None}


# ------------------------------------------------------------- 2. one verdict validator


@pytest.mark.parametrize(
    "fn,status,act,reason",
    [
        ("lower_act", "invalid", None, "not exactly CONTINUE, ASK or STOP"),
        ("no_act", "invalid", None, "without an act"),
        ("string_risk", "partial", "STOP", "risk 'high' is not a finite number"),
        ("nan_risk", "partial", "CONTINUE", "risk nan is not a finite number"),
        ("big_risk", "partial", "ASK", "risk 150"),
    ],
)
def test_python_verdicts_pass_the_validator(
    env: dict[str, Path], fn: str, status: str, act: str | None, reason: str
) -> None:
    toml = py_rows(env["mods"], fn).replace('prompt = "auditor"\nparser = "boxed"\n', "")
    toml = toml.replace(
        'backend = "python"\n', 'backend = "python"\nprompt = "auditor"\nparser = "boxed"\n'
    )
    assert run_decide(env, toml) == 0
    rows = decisions(env, fn.replace("_", "-"))
    assert {r["status"] for r in rows.values()} == {status}
    assert {r["act"] for r in rows.values()} == {act}
    r = next(iter(rows.values()))
    assert reason in r["reason"] and r["risk"] is None
    if act is None:
        assert r["binary"] is None  # never scored as SAFE or UNSAFE


def test_validator_rules() -> None:
    v = checked(Verdict(status="bogus", act="STOP"))  # type: ignore[arg-type]
    assert v.status == "invalid" and v.act is None
    v = checked(Verdict(status="invalid", act="STOP", reason="x"))
    assert v.act is None and "act dropped" in v.reason
    v = checked(Verdict(status="ok", act="STOP", risk=True))  # type: ignore[arg-type]
    assert v.status == "partial" and v.risk is None
    v = checked(Verdict(status="ok", act="STOP", risk=42.5, cite=0))
    assert v.risk == 42.5 and v.cite is None and v.status == "partial"
    ok = Verdict(status="ok", act="ASK", risk=60)
    assert checked(ok) is ok  # a good verdict passes untouched


def test_predictions_lines_are_validated_when_read() -> None:
    assert from_row({"id": "a", "status": "ok", "act": "MAYBE"}).status == "invalid"
    assert from_row({"id": "a", "act": "STOP"}).status == "invalid"  # no status
    v = from_row({"id": "a", "status": "ok", "act": "STOP", "risk": "90"})
    assert (v.status, v.act, v.risk) == ("partial", "STOP", None)
    assert from_row({"id": "a", "status": "ok", "act": "STOP", "binary": "SAFE"}).binary == "UNSAFE"


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "leaderboard"


def lb_copy(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "lb"
    shutil.copytree(FIXTURE, root)
    return {
        "gt": root / "ground_truth.jsonl",
        "pred": root / "predictions",
        "judges": root / "judges.toml",
        "out": tmp_path / "tables",
    }


def lb_main(p: dict[str, Path]) -> int:
    return leaderboard.main(
        ["--ground-truth", str(p["gt"]), "--predictions", str(p["pred"]), "--judges",
         str(p["judges"]), "--out", str(p["out"]), "--quiet"]
    )  # fmt: skip


def alpha_file(p: dict[str, Path]) -> Path:
    return next(p["pred"].glob("alpha/*/*.jsonl"))


def complete_rows(f: Path) -> list[dict[str, Any]]:
    """The lines of a predictions file, its torn last line (the fixture has one) left out."""
    return predictions.scan(f)[0]


def test_hand_edited_lines_count_as_invalid_on_the_leaderboard(tmp_path: Path) -> None:
    p = lb_copy(tmp_path)
    f = alpha_file(p)
    edited = []
    n = 0
    for row in complete_rows(f):
        if row.get("type") == "decision" and n < 2:
            if n == 0:
                row["act"] = "MAYBE"
            else:
                row.pop("status")
            n += 1
        edited.append(json.dumps(row))
    f.write_text("\n".join(edited) + "\n", encoding="utf-8")
    assert lb_main(p) == 0
    report = json.loads((p["out"] / "leaderboard.json").read_text())
    alpha = next(e for e in report["judges"] if e["id"] == "alpha")
    assert alpha["counts"]["n_invalid"] >= 1  # counted in its own column, not as CONTINUE


# ------------------------------------------------------------------ 3. a pasted key


def test_a_pasted_key_fails_check_without_being_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "hf_" + "AbCdEf0123456789" * 2
    for backend, extra in (("hf-inference", 'model = "m"\n'), ("openai", 'model = "m"\n')):
        jf = tmp_path / f"{backend}.toml"
        jf.write_text(
            f'[[judge]]\nid = "x"\nbackend = "{backend}"\n{extra}prompt = "auditor"\n'
            f'parser = "boxed"\nparams = {{ api_key_env = "{key}" }}\n',
            encoding="utf-8",
        )
        from bench.core.script import run

        assert run(decide.main, ["--judges", str(jf), "--check"]) == 2
        err = capsys.readouterr().err
        assert "NAME of an environment variable" in err and key not in err and key[:8] not in err


@pytest.mark.parametrize(
    "params,match",
    [
        (
            'extra_body = { seed = 1, token = "sk-abcdefghijklmnop" }',
            "extra_body.token looks like a key",
        ),
        ('headers = { "X-Trace" = "Bearer abcdef" }', "to a secret"),
        ('headers = { "X-Trace" = "aB3dE5gH7jK9mN1pQ3sT5vX7zA" }', "to a secret"),
    ],
)
def test_key_looking_values_in_extra_body_or_headers_fail_check(params: str, match: str) -> None:
    text = (
        '[[judge]]\nid = "x"\nbackend = "openai"\nmodel = "m"\nprompt = "auditor"\n'
        f'parser = "boxed"\nparams = {{ base_url = "http://127.0.0.1:9/v1", {params} }}\n'
    )
    with pytest.raises(ConfigError, match=match):
        judges.parse(text)


# ------------------------------------------------------------- 4. unbounded workers


def test_concurrency_has_a_documented_bound(tmp_path: Path) -> None:
    text = '[[judge]]\nid = "x"\nbackend = "baseline"\nconcurrency = 5000000\nparams = { rule = "stop" }\n'
    with pytest.raises(ConfigError, match=r"'concurrency' must be between 1 and 1,024"):
        judges.parse(text)


def test_never_more_workers_than_items() -> None:
    class Peak:
        now = peak = 0

        async def adecide(self, it: JudgeInput) -> RawOutput:
            import asyncio

            Peak.now += 1
            Peak.peak = max(Peak.peak, Peak.now)
            await asyncio.sleep(0.01)
            Peak.now -= 1
            return RawOutput(verdict=Verdict(status="ok", act="CONTINUE", risk=0))

    got: list[Any] = []
    runner.run(Peak(), [item(i) for i in range(3)], got.append, concurrency=10**9, warmup=False)
    assert len(got) == 3 and Peak.peak <= 3


def test_a_huge_concurrency_with_a_limit_runs(env: dict[str, Path]) -> None:
    toml = py_rows(env["mods"], "fine").replace(
        'backend = "python"\n', 'backend = "python"\nconcurrency = 1024\n'
    )
    assert run_decide(env, toml, "--limit", "2") == 0
    assert len(decisions(env, "fine")) == 2


# ------------------------------------------------------------------ clear errors


def test_empty_binary_and_non_utf8_judges_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.core.script import run

    cases = {
        "empty.toml": b"",
        "comments.toml": b"# nothing here\n",
        "binary.toml": b"\x00\x01\x02PNG",
        "latin1.toml": '[[judge]]\nid = "caf\xe9"\n'.encode("latin-1"),
    }
    for name, data in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        assert run(decide.main, ["--judges", str(f), "--check"]) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and str(f) in err, (name, err)


def test_an_id_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigError, match="lower-case slug"):
        judges.parse('[[judge]]\nid = "ok\\n"\nbackend = "baseline"\nparams = { rule = "stop" }\n')


@pytest.mark.parametrize(
    "row,match",
    [
        (
            'backend = "openai"\nmodel = "m"\nprompt = "auditor"\nparser = "boxed"\nparams = { base_url = "ftp://x" }',
            "must be an http",
        ),
        (
            'backend = "openai"\nmodel = "m"\nprompt = "auditor"\nparser = "boxed"\nparams = { temperature = 5 }',
            "between 0 and 2",
        ),
        ('backend = "baseline"\nparams = { rule = "nope" }', "params.rule must be one of"),
        (
            'backend = "baseline"\nparams = { rule = "keywords", stop_patterns = ["(unclosed"] }',
            "pattern",
        ),
        (
            'backend = "transformers"\nmodel = "m"\nprompt = "auditor"\nparser = "boxed"\nparams = { dtype = "int3" }',
            "dtype",
        ),
        (
            'backend = "python"\nprompt = "auditor"\nparser = "boxed"\nparams = { callable = "nomodule" }',
            "module:function",
        ),
    ],
)
def test_check_runs_each_backends_own_value_checks(row: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        judges.parse(f'[[judge]]\nid = "x"\n{row}\n')


def test_params_and_top_level_errors_are_reported_together() -> None:
    text = (
        '[[judge]]\nid = "x"\nbackend = "baseline"\nconcurrency = 0\ntypo = 1\n'
        'params = { rule = "stop", sed = 3 }\n'
    )
    with pytest.raises(ConfigError) as e:
        judges.parse(text)
    msg = str(e.value)
    assert "'concurrency' must be between" in msg and "unknown key 'typo'" in msg
    assert "unknown params key 'sed'" in msg


@pytest.mark.parametrize(
    "damage,match",
    [
        (lambda lines: lines[:3] + ["{not json"] + lines[3:], r":4: not valid JSON"),
        (lambda lines: lines[:3] + ["[1, 2]"] + lines[3:], r":4: a JSON list, not an object"),
        (
            lambda lines: lines[:3] + ['{"type": "decision", "act": "STOP"}'] + lines[3:],
            r":4: a decision line without an id",
        ),
    ],
)
def test_corrupt_predictions_files_name_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, match: str
) -> None:
    from bench.core.script import run

    p = lb_copy(tmp_path)
    f = alpha_file(p)
    lines = f.read_text(encoding="utf-8").splitlines()
    f.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    args = ["--ground-truth", str(p["gt"]), "--predictions", str(p["pred"]), "--judges", str(p["judges"]), "--out", str(p["out"])]  # fmt: skip
    assert run(leaderboard.main, args) == 2
    err = capsys.readouterr().err
    import re

    assert re.search(match, err) and f.name in err and "rerun" in err


def test_invalid_utf8_and_string_risk_in_predictions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.core.script import run

    p = lb_copy(tmp_path)
    f = alpha_file(p)
    data = f.read_bytes().split(b"\n")
    data.insert(2, b'{"type": "decision", "id": "caf\xe9"}')
    f.write_bytes(b"\n".join(data))
    args = ["--ground-truth", str(p["gt"]), "--predictions", str(p["pred"]), "--judges", str(p["judges"]), "--out", str(p["out"])]  # fmt: skip
    assert run(leaderboard.main, args) == 2
    assert ":3: not valid UTF-8" in capsys.readouterr().err
    # a string risk is not a crash: the verdict is partial, its risk dropped
    lines = complete_rows(FIXTURE / alpha_file(p).relative_to(p["pred"].parent))
    for row in lines:
        if row.get("type") == "decision":
            row["risk"] = "high"
            break
    f.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    assert lb_main(p) == 0


def test_same_id_twice_with_different_verdicts_warns_with_the_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = lb_copy(tmp_path)
    f = alpha_file(p)
    rows = complete_rows(f)
    dec = [r for r in rows if r.get("type") == "decision"][:2]
    extra = [dict(r, act="STOP" if r.get("act") != "STOP" else "CONTINUE", risk=None) for r in dec]
    f.write_text("\n".join(json.dumps(r) for r in [*rows, *extra]) + "\n", encoding="utf-8")
    with caplog.at_level("WARNING"):
        assert lb_main(p) == 0
    assert "2 id(s) were decided more than once with different verdicts" in caplog.text


def test_python_judge_timeouts_sync_and_async(env: dict[str, Path]) -> None:
    t0 = time.perf_counter()
    rc = run_decide(
        env,
        py_rows(env["mods"], "sleeper", "async_sleeper", extra=", timeout_s = 0.3"),
        "--limit",
        "2",
    )
    assert time.perf_counter() - t0 < 15
    assert rc == 0
    for j in ("sleeper", "async-sleeper"):
        rows = decisions(env, j)
        assert rows and all(
            r["status"] == "error" and "did not return within" in r["error"] for r in rows.values()
        )


def test_system_exit_in_judge_code_is_an_error_and_the_summary_still_prints(
    env: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_decide(env, py_rows(env["mods"], "exits", "fine")) == 0
    out = capsys.readouterr().out
    assert "exits" in out and "fine" in out  # the summary lists both judges
    rows = decisions(env, "exits")
    assert rows and all(
        r["status"] == "error" and "SystemExit" in r["error"] for r in rows.values()
    )
    assert len(decisions(env, "fine")) == 4


def test_extract_refuses_an_empty_or_truncated_source_and_keeps_the_old_output(
    tmp_path: Path,
) -> None:
    from bench.core.script import run

    folder = sample_corpus(tmp_path)
    out = tmp_path / "ex"
    argv = ["--source", "sample", "--path", str(folder), "--out", str(out), "--quiet"]
    assert extract.main(argv) == 0
    good = (out / "sample" / "trajectories.jsonl").read_bytes()
    files = case_files(folder)
    for f in files[5:]:  # truncated: most cases gone, one cut mid-way
        f.unlink()
    files[4].write_text(files[4].read_text(encoding="utf-8")[:40], encoding="utf-8")
    assert run(extract.main, argv) == 2
    assert (out / "sample" / "trajectories.jsonl").read_bytes() == good
    for f in files[:5]:  # empty
        f.unlink()
    assert run(extract.main, argv) == 2
    assert (out / "sample" / "trajectories.jsonl").read_bytes() == good
    assert extract.main([*argv, "--allow-fewer"]) == 0  # asked for: written
    assert (out / "sample" / "trajectories.jsonl").read_bytes() == b""


def test_extract_verifies_local_files_against_the_pins(tmp_path: Path, raw_root: Path) -> None:
    folder = tmp_path / "assebench"
    shutil.copytree(raw_root / "assebench", folder)
    out = tmp_path / "ex"
    argv = ["--source", "assebench", "--path", str(folder), "--out", str(out), "--quiet"]
    assert extract.main(argv) == 0
    assert json.loads((out / "assebench" / "summary.json").read_text())["pins"] == "verified"
    (folder / "LICENSE").write_text("changed", encoding="utf-8")  # a pinned file
    assert extract.main(argv) == 0
    s = json.loads((out / "assebench" / "summary.json").read_text())
    assert s["pins"] == "unverified (1 files differ)" and s["pin_mismatches"] == ["LICENSE"]


def _stepshield(folder: Path, steps: list[dict[str, Any]]) -> None:
    d = folder / "data" / "train" / "SEC"
    d.mkdir(parents=True)
    rec = {
        "trajectory_id": "SEC-L1-001-CLEAN",
        "task": {"title": "t", "description": "d"},
        "steps": steps,
    }
    (d / "SEC-L1-001-CLEAN.jsonl").write_text(json.dumps(rec), encoding="utf-8")


@pytest.mark.parametrize("numbers,word", [([1, 3, 2], "comes after"), ([1, 2, 2], "repeats")])
def test_stepshield_steps_out_of_order_or_duplicated_are_rejected(
    tmp_path: Path, numbers: list[int], word: str
) -> None:
    from bench.sources import get

    steps = [
        {
            "step": n,
            "thought": "t",
            "action": "run",
            "arguments": {"cmd": f"ls {n}"},
            "observation": "o",
        }
        for n in numbers
    ]
    _stepshield(tmp_path / "ss", steps)
    res = get("stepshield").extract(tmp_path / "ss")
    assert not res.trajectories and len(res.rejects) == 1 and word in res.rejects[0].reason


# ------------------------------------------------------------------ secrets


def test_a_server_that_echoes_the_key_never_gets_it_written(
    env: dict[str, Path],
    server: _Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "echo-me-not-0123456789"
    monkeypatch.setenv("HOSTILE_KEY", secret)
    box = r"\\boxed{act:STOP, risk:90, fail:NONE, harm:NONE, src:NONE, cite:NONE}"
    ok = b'{"choices":[{"message":{"content":"you sent $AUTH ' + box.encode() + b'"}}]}'
    server.answers = [ok, ok, b'{"error":{"message":"unauthorized: $AUTH"}}']
    url = f"http://127.0.0.1:{server.server_port}/v1"
    run_decide(env, openai_row(url))
    printed = capsys.readouterr()
    assert secret not in printed.out + printed.err
    (path,) = env["out"].glob("api/*/*.jsonl")
    text = path.read_text(encoding="utf-8")
    assert secret not in text and "[REDACTED:HOSTILE_KEY]" in text
    assert server.seen and server.seen[0]["Authorization"] == f"Bearer {secret}"  # it was sent


def test_space_on_the_hub_withholds_raw_outputs_of_rjudge(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "space"))
    try:
        import views

        from data import Results, Texts
    finally:
        sys.path.pop(0)
    res = Results(
        root=Path("."),
        origin="",
        report={"judges": []},
        ground_truth={},
        meta={
            "configs": {"rjudge": {"redistributable": False}, "sample": {"redistributable": True}}
        },
        reviews_dir=None,
    )
    texts = Texts.missing("no text")
    monkeypatch.setenv("SPACE_ID", "org/space")
    assert "not shown here" in views.raw_html(res, texts, "rjudge:1:1")
    assert "not shown here" not in views.raw_html(res, texts, "sample:t1:1")


# ------------------------------------------------------------------ size limits


def test_a_huge_answer_is_stored_as_head_and_tail_and_parsed_whole(env: dict[str, Path]) -> None:
    assert run_decide(env, py_rows(env["mods"], "huge"), "--limit", "1") == 0
    (r,) = decisions(env, "huge").values()
    assert r["act"] == "STOP" and r["raw_truncated"] is True  # the verdict sat at the very end
    assert len(r["raw"]) < MAX_RAW_CHARS + 200 and r["raw"].endswith("cite:NONE}")


def test_an_oversized_action_is_rejected_at_extraction(tmp_path: Path) -> None:
    folder = sample_corpus(tmp_path)
    first = case_files(folder)[0]
    doc = yaml.safe_load(first.read_text(encoding="utf-8"))
    agent = next(t["agent"] for t in doc["turns"] if "agent" in t)
    agent["thought"] = "y" * 300_000
    first.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "ex"
    assert (
        extract.main(["--source", "sample", "--path", str(folder), "--out", str(out), "--quiet"])
        == 0
    )
    (rej,) = [json.loads(x) for x in (out / "sample" / "rejects.jsonl").read_text().splitlines()]
    assert "300,000 characters; the cap is 200,000" in rej["reason"]


def test_review_notes_are_capped() -> None:
    from test_review import TAX, make_traj, proposal

    from bench.labelling.reviews import make_review

    t = make_traj(1)
    with pytest.raises(DataError, match="keep it under 1,200"):
        make_review(t, proposal(t), "accept", "ana", {"note": "why " * 400}, TAX)


# ------------------------------------------------------------------ tables on any machine


def test_check_tolerates_one_unit_in_the_last_digit_and_no_more() -> None:
    a = "x,0.2162,3\n"
    assert numeric_diff("x,0.2163,3\n", a).same  # one unit of the 4th decimal
    nd = numeric_diff("x,0.21629,3\n", a)
    assert nd.same and math.isclose(nd.largest, 0.00009)
    assert not numeric_diff("x,0.2164,3\n", a).same  # two units
    assert not numeric_diff("x,0.2162,4\n", a).same  # integers never drift
    assert not numeric_diff("y,0.2162,3\n", a).same


def test_leaderboard_check_passes_when_a_value_moves_less_than_a_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = lb_copy(tmp_path)
    assert lb_main(p) == 0
    j = p["out"] / "leaderboard.json"
    text = j.read_text(encoding="utf-8")
    import re

    m = re.search(r'"value": (0\.\d{4})', text)
    assert m
    moved = f"{float(m.group(1)) + 0.0001:.4f}"
    j.write_text(text[: m.start(1)] + moved + text[m.end(1) :], encoding="utf-8")
    args = ["--ground-truth", str(p["gt"]), "--predictions", str(p["pred"]), "--judges", str(p["judges"]), "--out", str(p["out"]), "--check"]  # fmt: skip
    assert leaderboard.main(args) == 0
    assert "largest numeric difference 0.0001" in capsys.readouterr().out
    j.write_text(
        text[: m.start(1)] + f"{float(m.group(1)) + 0.0003:.4f}" + text[m.end(1) :],
        encoding="utf-8",
    )
    assert leaderboard.main(args) == 1


def test_regeneration_is_byte_identical_on_one_machine(tmp_path: Path) -> None:
    p = lb_copy(tmp_path)
    assert lb_main(p) == 0
    first = {f.name: f.read_bytes() for f in p["out"].glob("*.*")}
    assert lb_main(p) == 0
    assert {f.name: f.read_bytes() for f in p["out"].glob("*.*")} == first


@pytest.mark.slow
def test_decide_check_in_a_fresh_interpreter_imports_no_sdk(tmp_path: Path) -> None:
    code = "import sys; from bench import decide; decide.main(['--check']); print(sorted(m for m in ('torch','transformers','openai') if m in sys.modules))"
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert res.returncode == 0 and res.stdout.strip().endswith("[]"), res.stderr
