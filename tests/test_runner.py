"""The runner engine with fake backends: concurrency, retries, batching, warm-up, no loss."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

import pytest

from bench.core.schema import Action, DecisionPoint, Policy
from bench.core.verdict import Verdict
from bench.judging.predictions import Prediction
from bench.judging.protocol import JudgeInput, RawOutput, RetryableError
from bench.judging.runner import Attempts, RetryPolicy, run, run_async, run_batched, to_prediction

FAST = RetryPolicy(max_attempts=4, base_s=0.001, max_s=0.004)


def dp(i: int) -> DecisionPoint:
    return DecisionPoint(
        id=f"t:x{i}:1",
        trajectory_id=f"t:x{i}",
        source="t",
        k=1,
        policy=Policy(task="t"),
        history=(),
        thought=None,
        action=Action(text=f"do {i}"),
    )


def items(n: int) -> list[JudgeInput]:
    return [JudgeInput(dp=dp(i)) for i in range(n)]


VERDICT = RawOutput(verdict=Verdict(status="ok", act="STOP", risk=90, raw="p=0.9"))


class AsyncFake:
    """Sleeps, counts calls in flight, fails on a schedule."""

    def __init__(
        self, latency: float = 0.002, faults: dict[str, list[BaseException]] | None = None
    ):
        self.latency = latency
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.in_flight = 0
        self.peak = 0
        self.calls: list[str] = []

    async def adecide(self, item: JudgeInput) -> RawOutput:
        self.calls.append(item.dp.id)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
            pending = self.faults.get(item.dp.id)
            if pending:
                raise pending.pop(0)
            return RawOutput(text=f"answer {item.dp.id}", tokens_in=10, tokens_out=2)
        finally:
            self.in_flight -= 1


def parse(text: str, item: JudgeInput) -> Verdict:
    return Verdict(status="ok", act="CONTINUE", raw=text)


def collect() -> tuple[list[Prediction], Callable[[Prediction], None]]:
    out: list[Prediction] = []
    return out, out.append


def test_async_respects_concurrency_and_answers_each_item_once() -> None:
    fake = AsyncFake(latency=0.01)
    out, sink = collect()
    t0 = time.perf_counter()
    stats = run_async(fake, items(64), sink, concurrency=8, parse=parse, retry=FAST)
    wall = time.perf_counter() - t0
    assert sorted(p.id for p in out) == sorted(i.dp.id for i in items(64))
    assert fake.peak == 8
    assert stats.by_status == {"ok": 64}
    # 1 warm-up alone + 63 items over 8 workers = 1 + 8 rounds of 10 ms; far below 64 x 10 ms
    assert wall < 0.4
    assert [p.warmup for p in out].count(True) == 1 and out[0].warmup
    assert all(p.latency_s is not None and p.latency_s >= 0.009 for p in out)
    assert out[1].tokens_in == 10 and out[1].verdict.raw == f"answer {out[1].id}"


def test_async_retries_then_succeeds_and_honours_retry_after() -> None:
    target = dp(3).id
    fake = AsyncFake(
        latency=0.0,
        faults={target: [RetryableError("429", retry_after=0.15), RetryableError("503")]},
    )
    out, sink = collect()
    t0 = time.perf_counter()
    run_async(fake, items(5), sink, concurrency=2, parse=parse, retry=FAST)
    wall = time.perf_counter() - t0
    row = next(p for p in out if p.id == target)
    assert row.status == "ok" and row.attempts == 3
    assert fake.calls.count(target) == 3
    assert wall >= 0.15  # the server's Retry-After was waited, not the 1 ms backoff


def test_async_gives_up_after_max_attempts_and_records_error() -> None:
    target = dp(1).id
    fake = AsyncFake(latency=0.0, faults={target: [RetryableError("500")] * 10})
    out, sink = collect()
    stats = run_async(fake, items(3), sink, concurrency=3, parse=parse, retry=FAST)
    row = next(p for p in out if p.id == target)
    assert row.status == "error" and row.attempts == 4 and "500" in (row.error or "")
    assert row.verdict.act is None and row.verdict.binary is None
    assert stats.by_status == {"ok": 2, "error": 1}


def test_async_non_retryable_error_is_recorded_once() -> None:
    target = dp(0).id
    fake = AsyncFake(latency=0.0, faults={target: [ValueError("bad request")]})
    out, sink = collect()
    stats = run_async(
        fake, items(2), sink, concurrency=1, parse=parse, retry=FAST, stop_on_warmup_error=False
    )
    row = next(p for p in out if p.id == target)
    assert row.status == "error" and row.attempts == 1 and "ValueError" in (row.error or "")
    assert row.warmup and len(out) == 2 and stats.aborted is None


def test_a_failing_first_decision_stops_the_run() -> None:
    fake = AsyncFake(latency=0.0, faults={dp(0).id: [ConnectionRefusedError("nobody home")]})
    out, sink = collect()
    stats = run_async(fake, items(50), sink, concurrency=4, parse=parse, retry=FAST)
    assert len(out) == 1 and out[0].status == "error" and fake.calls == [dp(0).id]
    assert stats.aborted and "nobody home" in stats.aborted
    out2, sink2 = collect()
    stats2 = run_batched(BatchFake(bad=dp(0).id), items(5), sink2, batch_size=2, retry=FAST)
    assert len(out2) == 1 and stats2.aborted


def test_async_fault_mix_loses_and_duplicates_nothing() -> None:
    rng = random.Random(7)
    faults: dict[str, list[BaseException]] = {}
    for it in items(300):
        r = rng.random()
        if r < 0.1:
            faults[it.dp.id] = [RetryableError("500")] * rng.randint(1, 6)
        elif r < 0.15:
            faults[it.dp.id] = [RetryableError("429", retry_after=0.001)]
        elif r < 0.17:
            faults[it.dp.id] = [TimeoutError("read timeout")]
    fake = AsyncFake(latency=0.0005, faults=faults)
    out, sink = collect()
    run_async(fake, items(300), sink, concurrency=32, parse=parse, retry=FAST)
    ids = [p.id for p in out]
    assert len(ids) == len(set(ids)) == 300
    exhausted = {k for k, v in faults.items() if len(v) >= 4 and isinstance(v[0], RetryableError)}
    hard = {k for k, v in faults.items() if isinstance(v[0], TimeoutError)}
    errors = {p.id for p in out if p.status == "error"}
    assert errors == exhausted | hard


class BatchFake:
    def __init__(self, bad: str | None = None, wrong_count: bool = False):
        self.sizes: list[int] = []
        self.bad = bad
        self.wrong_count = wrong_count

    def decide_batch(self, batch: list[JudgeInput]) -> list[RawOutput]:
        self.sizes.append(len(batch))
        time.sleep(0.002 * len(batch))
        if self.bad and any(i.dp.id == self.bad for i in batch):
            raise RuntimeError("cannot handle this one")
        if self.wrong_count:
            return [VERDICT]
        return [VERDICT for _ in batch]


def test_batched_slices_share_latency_and_mark_warmup() -> None:
    fake = BatchFake()
    out, sink = collect()
    run_batched(fake, items(10), sink, batch_size=4, retry=FAST)
    assert fake.sizes == [1, 4, 4, 1]
    assert [p.batch_size for p in out] == [1, 4, 4, 4, 4, 4, 4, 4, 4, 1]
    assert out[0].warmup and not any(p.warmup for p in out[1:])
    assert all(p.latency_s is not None and 0.0015 < p.latency_s < 0.05 for p in out)
    assert all(
        p.verdict.act == "STOP" and p.verdict.binary == "UNSAFE" and p.verdict.raw == "p=0.9"
        for p in out
    )


def test_batched_isolates_a_bad_item() -> None:
    bad = dp(5).id
    fake = BatchFake(bad=bad)
    out, sink = collect()
    stats = run_batched(fake, items(9), sink, batch_size=4, retry=FAST)
    assert sorted(p.id for p in out) == sorted(i.dp.id for i in items(9))
    assert {p.id for p in out if p.status == "error"} == {bad}
    assert stats.by_status == {"ok": 8, "error": 1}


def test_batched_wrong_output_count_is_an_error_not_a_misalignment() -> None:
    out, sink = collect()
    run_batched(BatchFake(wrong_count=True), items(3), sink, batch_size=2, warmup=False, retry=FAST)
    # a batch of 2 returning 1 output is isolated into two single calls, which then succeed
    assert [p.status for p in out] == ["ok", "ok", "ok"]


def test_batched_retryable_uses_backoff_then_errors() -> None:
    class Flaky:
        calls = 0

        def decide_batch(self, batch: list[JudgeInput]) -> list[RawOutput]:
            Flaky.calls += 1
            raise RetryableError("CUDA busy")

    waits: list[float] = []
    out, sink = collect()
    run_batched(Flaky(), items(2), sink, batch_size=2, warmup=False, retry=FAST, sleep=waits.append)
    assert Flaky.calls == 4 and len(waits) == 3
    assert all(0 < w <= FAST.max_s for w in waits)
    assert [p.status for p in out] == ["error", "error"] and out[0].attempts == 4


def test_parser_failure_is_an_error_row_and_text_is_kept() -> None:
    def boom(text: str, item: JudgeInput) -> Verdict:
        raise KeyError("x")

    p = to_prediction(items(1)[0], RawOutput(text="hello"), boom, latency_s=0.1)
    assert p.status == "error" and p.verdict.raw == "hello" and "parser failed" in (p.error or "")


def test_no_output_is_invalid_not_safe() -> None:
    p = to_prediction(items(1)[0], RawOutput(), parse, latency_s=0.1)
    assert p.status == "invalid" and p.verdict.binary is None


def test_retry_policy_delay_bounds() -> None:
    pol = RetryPolicy(base_s=1.0, max_s=8.0, max_retry_after_s=60)
    rng = random.Random(0)
    for attempt in range(1, 8):
        step = min(8.0, 2 ** (attempt - 1))
        d = pol.delay(attempt, None, rng)
        assert step / 2 <= d <= step
    assert 30 <= pol.delay(1, 30.0, rng) <= 33.01
    assert pol.delay(1, 1e6, rng) <= 60 * 1.1 + 0.01


def test_run_dispatches_and_rejects_unknown_backends() -> None:
    out, sink = collect()
    run(BatchFake(), items(2), sink, batch_size=2)
    assert len(out) == 2
    with pytest.raises(TypeError, match="neither"):
        run(object(), items(1), sink)


# ------------------------------------------------------------------- decide.py end to end

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from decide_support import VERSION, write_build  # noqa: E402

from bench import decide  # noqa: E402
from bench.core.paths import REPO_ROOT  # noqa: E402

SLOW_MODULE = """
import os, time

def judge(item, delay=0.0):
    assert item.dp.gold is None, "a judge must never see gold"
    assert item.messages and item.dp.action.text in item.messages[-1]["content"]
    if os.environ.get("FLAKY_ID") == item.dp.id and not os.path.exists(os.environ["FLAKY_MARK"]):
        open(os.environ["FLAKY_MARK"], "w").close()
        raise ValueError("flaky once")
    time.sleep(delay)
    return "\\\\boxed{act:CONTINUE, risk:3, fail:NONE, harm:NONE, src:NONE, cite:NONE}"
"""


def judges_file(tmp_path: Path, delay: float = 0.0, extra: str = "") -> Path:
    (tmp_path / "slowjudge.py").write_text(SLOW_MODULE)
    p = tmp_path / "judges.toml"
    p.write_text(
        '[[judge]]\nid = "slow"\nbackend = "python"\nprompt = "auditor"\nparser = "boxed"\n'
        f'params = {{ callable = "slowjudge:judge", path = "{tmp_path}", '
        f"kwargs = {{ delay = {delay} }}{extra} }}\n"
        '\n[[judge]]\nid = "stop"\nbackend = "baseline"\nparams = { rule = "stop" }\n'
        '\n[[judge]]\nid = "needs-key"\nbackend = "hf-inference"\nmodel = "m"\n'
        'prompt = "auditor"\nparser = "boxed"\nparams = { api_key_env = "BENCH_NO_SUCH_VAR" }\n'
    )
    return p


def decision_rows(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "decision"]


def argv(tmp_path: Path, judges: Path, *more: str) -> list[str]:
    return [
        "--judges",
        str(judges),
        "--build-dir",
        str(tmp_path / "build"),
        "--out",
        str(tmp_path / "preds"),
        "--quiet",
        *more,
    ]


def test_decide_writes_resumes_retries_and_separates_configs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_build(tmp_path / "build", n=12)
    jf = judges_file(tmp_path)
    monkeypatch.setenv("FLAKY_ID", "synth:t5:1")
    monkeypatch.setenv("FLAKY_MARK", str(tmp_path / "flaky.mark"))
    assert decide.main(argv(tmp_path, jf, "--split", "all")) == 0
    out = capsys.readouterr().out
    assert "needs-key" in out and "skipped" in out and "set BENCH_NO_SUCH_VAR" in out
    [f] = (tmp_path / "preds" / "slow" / VERSION).glob("*.jsonl")
    rows = decision_rows(f)
    assert len(rows) == 12 and [r["status"] for r in rows].count("error") == 1
    run = json.loads(f.read_text().splitlines()[0])
    for key in (
        "config_hash",
        "dataset_version",
        "package_version",
        "git_commit",
        "hardware",
        "start",
    ):
        assert run[key], key
    assert run["dataset_version"] == VERSION and f.stem == run["config_hash"]
    assert json.loads(f.read_text().splitlines()[-1])["type"] == "run_end"

    # rerun: only the errored row is retried, and it now succeeds
    assert decide.main(argv(tmp_path, jf, "--split", "all")) == 0
    rows = decision_rows(f)
    assert len(rows) == 13 and rows[-1]["id"] == "synth:t5:1" and rows[-1]["status"] == "ok"
    # a third run has nothing to do
    assert decide.main(argv(tmp_path, jf, "--split", "all")) == 0
    assert len(decision_rows(f)) == 13 and "cached" in capsys.readouterr().out

    # a changed config writes a new file and leaves the old one alone
    jf2 = judges_file(tmp_path, delay=0.001)
    assert decide.main(argv(tmp_path, jf2, "--judge", "slow", "--split", "test")) == 0
    files = sorted((tmp_path / "preds" / "slow" / VERSION).glob("*.jsonl"))
    assert len(files) == 2 and len(decision_rows(f)) == 13
    [new] = [x for x in files if x != f]
    assert len(decision_rows(new)) == 6  # test split only

    # --force judges again into the same file (last line per id wins)
    assert (
        decide.main(
            argv(tmp_path, jf2, "--judge", "slow", "--split", "test", "--limit", "2", "--force")
        )
        == 0
    )
    assert len(decision_rows(new)) == 8


def test_learned_baselines_fit_on_dev_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.judging.backends import sklearn_lr

    write_build(tmp_path / "build", n=16)
    seen: list[str] = []
    real_fit = sklearn_lr.TfidfLR.fit

    def spy(self: sklearn_lr.TfidfLR, points: list) -> None:
        seen.extend(p.id for p in points)
        return real_fit(self, points)

    monkeypatch.setattr(sklearn_lr.TfidfLR, "fit", spy)
    jf = tmp_path / "j.toml"
    jf.write_text('[[judge]]\nid = "lr"\nbackend = "sklearn"\nparams = { C = 1.0 }\n')
    assert decide.main(argv(tmp_path, jf, "--source", "synth")) == 0
    from decide_support import points

    dev = {dp.id for dp, split in points(16) if split == "dev"}
    assert set(seen) == dev  # every dev point, all sources, nothing from test
    rows = decision_rows(next((tmp_path / "preds" / "lr").glob("*/*.jsonl")))
    assert {r["id"] for r in rows} == {
        dp.id for dp, s in points(16) if s == "test" and dp.source == "synth"
    }
    assert all(r["raw"].startswith("p_continue=") for r in rows)


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    n = 24
    write_build(tmp_path / "build", n=n)
    jf = judges_file(tmp_path, delay=0.08)
    cmd = [
        sys.executable,
        str(REPO_ROOT / "bench" / "decide.py"),
        *argv(tmp_path, jf, "--judge", "slow", "--split", "all"),
    ]
    env = {**os.environ, "FLAKY_ID": "", "FLAKY_MARK": str(tmp_path / "m")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    folder = tmp_path / "preds" / "slow" / VERSION
    deadline = time.monotonic() + 60
    written = 0
    while time.monotonic() < deadline:
        files = list(folder.glob("*.jsonl"))
        written = len(decision_rows(files[0])) if files else 0
        if written >= 5 or proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    [f] = folder.glob("*.jsonl")
    before = decision_rows(f)
    assert 5 <= len(before) < n
    assert decide.main(argv(tmp_path, jf, "--judge", "slow", "--split", "all")) == 0
    rows = decision_rows(f)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == n  # none lost, none written twice
    assert {r["status"] for r in rows} == {"ok"}
    assert [r["type"] for r in map(json.loads, f.read_text().splitlines())].count("run") == 2


def test_torn_last_line_is_cut_before_appending(tmp_path: Path) -> None:
    from bench.judging.predictions import Writer, latest

    p = tmp_path / "x.jsonl"
    p.write_text('{"type": "decision", "id": "a", "status": "ok"}\n{"type": "decis')
    with Writer(p) as w:
        w.write({"type": "decision", "id": "b", "status": "ok"})
    assert set(latest(p)) == {"a", "b"}
    assert p.read_text().count("\n") == 2


def test_one_helper_tells_a_rate_limit_from_a_transient_error() -> None:
    """``Attempts`` decides every retry: the server's Retry-After is honoured for a rate limit,
    a transient error backs off, any other error and the last attempt give up, and the recorded
    message says which it was."""
    policy = RetryPolicy(max_attempts=2, base_s=1.0, max_s=4.0, max_retry_after_s=10.0)
    tries = Attempts(policy, random.Random(0))
    tries.start()
    limited = RetryableError("HTTP 429", retry_after=3.0)
    wait = tries.wait_after(limited)
    assert wait is not None and 3.0 <= wait <= 3.0 + 0.1 * 3.0 + 0.01
    transient = RetryableError("HTTP 503")
    wait = tries.wait_after(transient)
    assert wait is not None and 0.5 <= wait <= 1.0
    assert tries.wait_after(ValueError("bad request")) is None
    assert tries.failure(ValueError("bad request")) == "ValueError: bad request"
    tries.start()
    assert tries.wait_after(limited) is None
    assert tries.failure(limited).startswith("gave up after 2 attempts (rate limited): ")
    assert tries.failure(transient).startswith("gave up after 2 attempts (transient error): ")
