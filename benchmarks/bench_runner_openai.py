"""Runner benchmark: the ``openai`` backend through the runner against a mock server.

The mock OpenAI-compatible server (``tests/fakes/mockserver.py``) runs in a SEPARATE process, so the CPU
time measured here (``time.process_time`` of this process) is the harness's alone: rendering,
request encoding, the HTTP client, the event loop, the runner's bookkeeping, parsing and writing
the predictions file.

Prints, per concurrency (1, 8, 32, 128 by default): decisions per second, the ratio to the ideal
(concurrency / latency) and harness CPU milliseconds per decision; then where the CPU goes (each
stage timed alone on the same decisions), HTTP clients compared on the bare request path, and
a fault run (10% HTTP 500, 5% HTTP 429 with Retry-After, 2% hangs past the client timeout) that
checks every decision was answered or recorded as an error after its retries, none lost and
none duplicated, against the predictions file and the server's per-id request counts.

    python benchmarks/bench_runner_openai.py            # the full run (about 2.5 minutes)
    python benchmarks/bench_runner_openai.py --quick    # 500 decisions, concurrency 8/32/128
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from bench import decide
from bench.core.schema import Action, DecisionPoint, Policy, Turn
from bench.judging import backends, runner
from bench.judging.predictions import Writer, latest, read_lines
from bench.judging.protocol import JudgeInput, JudgeSpec
from bench.prompts import parsers as contract
from bench.prompts.renderer import render

TESTS = Path(__file__).resolve().parents[1] / "tests"
"""Where the test doubles live (``tests/fakes/``): the mock server is started from there."""


def synthetic(n: int) -> list[DecisionPoint]:
    """``n`` decision points with a few turns of history each (the project's own filler text)."""
    out = []
    for i in range(n):
        hist = (
            Turn(role="user", content=f"Please tidy the project folder number {i} and report."),
            Turn(
                role="agent",
                thought="List the files first.",
                action=Action(
                    text=f"ls -la /home/user/project{i}",
                    tool="shell",
                    arguments={"cmd": f"ls -la /home/user/project{i}"},
                ),
                observation="build/  notes.txt  main.py  .env  tests/ " * 8,
            ),
            Turn(role="environment", content="The shell session is still open."),
        )
        out.append(
            DecisionPoint(
                id=f"synthetic:{i:06d}:2",
                trajectory_id=f"synthetic:{i:06d}",
                source="synthetic",
                k=2,
                policy=Policy(system="You are a careful coding agent.", task="Tidy the folder."),
                history=hist,
                thought="Remove the build artefacts and the stale env file.",
                action=Action(
                    text=f"rm -rf /home/user/project{i}/build /home/user/project{i}/.env",
                    tool="shell",
                ),
            )
        )
    return out


class Server:
    """The mock server in its own process."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fakes.mockserver", "--port", "0", *args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=TESTS,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.proc.kill()
            raise RuntimeError(f"mock server did not print its port (got {line!r})")
        self.port = int(line)
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as r:
            return json.load(r)

    def cpu_s(self) -> float:
        """The server process's CPU seconds so far (Linux /proc)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return float("nan")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def judge(url: str, concurrency: int, client: str = "auto", timeout_s: float = 30.0) -> JudgeSpec:
    return JudgeSpec(
        id="bench-mock",
        backend="openai",
        model="mock",
        prompt="auditor",
        parser="boxed",
        params={"base_url": url, "timeout_s": timeout_s, "client": client, "max_tokens": 256},
        concurrency=concurrency,
    )


def parse(text: str, item: JudgeInput) -> Any:
    return contract.parse("boxed", text, n_visible=len(item.dp.history))


VERSION = "v-bench"


def write_build(root: Path, dps: list[DecisionPoint]) -> Path:
    """A built dataset as decide.py reads it: ``<root>/<version>/decision_points.jsonl``."""
    (root / VERSION).mkdir(parents=True, exist_ok=True)
    with (root / VERSION / "decision_points.jsonl").open("w", encoding="utf-8") as f:
        for dp in dps:
            f.write(json.dumps({**dp.to_dict(), "split": "test", "disputed": False}) + "\n")
    (root / "LATEST").write_text(VERSION + "\n", encoding="utf-8")
    return root


def decide_cli(
    url: str, c: int, tmp: Path, name: str, timeout_s: float = 30.0
) -> tuple[Path, float, float]:
    """``python bench/decide.py`` (its main, in this process) for one judge pointing at ``url``;
    returns (predictions file, wall s, harness CPU s)."""
    jt = tmp / f"judges-{name}.toml"
    jt.write_text(
        f"""[[judge]]
id = "bench-mock"
backend = "openai"
model = "mock"
prompt = "auditor"
parser = "boxed"
concurrency = {c}
[judge.params]
base_url = "{url}"
timeout_s = {timeout_s}
max_tokens = 256
""",
        encoding="utf-8",
    )
    out = tmp / f"out-{name}"
    argv = [
        "--judges",
        str(jt),
        "--build-dir",
        str(tmp / "build"),
        "--out",
        str(out),
        "--split",
        "test",
        "--quiet",
    ]
    t0, c0 = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = decide.main(argv)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if rc != 0:
        raise RuntimeError(f"decide.py exited {rc}")
    (path,) = out.glob("bench-mock/*/*.jsonl")
    return path, wall, cpu


def scaling(n: int, latency: float, levels: list[int], tmp: Path) -> dict[int, float]:
    print(
        f"\n## Scaling: {n} decisions per level, {latency * 1000:.0f} ms server latency, "
        "through decide.py (load, render, runner, parse, predictions file)\n"
    )
    print(
        "| concurrency | decisions/s | ideal/s | ratio to ideal | harness CPU ms/decision | "
        "server CPU ms/request | wall s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    cpu_ms: dict[int, float] = {}
    for c in levels:
        with Server("--latency", str(latency)) as srv:
            s0 = srv.cpu_s()
            path, wall, cpu = decide_cli(srv.url, c, tmp, f"c{c}")
            s_cpu = srv.cpu_s() - s0
            total = srv.stats()["total"]
        last = latest(path)
        assert len(last) == n and all(r["status"] == "ok" for r in last.values()), "incomplete run"
        rate = n / wall
        ideal = c / latency
        cpu_ms[c] = cpu / n * 1000
        print(
            f"| {c} | {rate:.1f} | {ideal:.0f} | {rate / ideal:.3f} | {cpu_ms[c]:.3f} | "
            f"{s_cpu / max(total, 1) * 1000:.3f} | {wall:.2f} |",
            flush=True,
        )
    return cpu_ms


def split(n: int, tmp: Path) -> dict[str, float]:
    """Each stage of the harness's per-decision work timed alone on the same decisions;
    returns CPU ms per decision by stage."""
    print(f"\n## Where the harness CPU goes (each stage alone, {n} decisions)\n")
    dps = synthetic(n)
    be = backends.get("openai").factory(judge("http://127.0.0.1:9/v1", 32))
    resp = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "mock",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": "<think>mock reasoning</think>\n\\boxed{act:STOP, risk:80, "
                        "fail:data_exposure, harm:privacy, src:untrusted_content, cite:1}",
                    },
                }
            ],
            "usage": {"prompt_tokens": 400, "completion_tokens": 30, "total_tokens": 430},
        }
    ).encode()
    from bench.dataset import reader as dataset

    t = time.process_time
    cl = t()
    dataset.load(build_dir=tmp / "build")
    c0 = t()
    items = [JudgeInput(dp=dp, messages=render(dp, "auditor").messages) for dp in dps]
    c1 = t()
    bodies = [be.request_body(it) for it in items]
    c2 = t()
    outs = [be._output(resp) for _ in items]
    c3 = t()
    preds = [
        runner.to_prediction(it, o, parse, latency_s=0.05)
        for it, o in zip(items, outs, strict=True)
    ]
    c4 = t()
    with Writer(tmp / "split.jsonl") as w:
        for p in preds:
            w.decision(p)
    c5 = t()
    rows = [
        ("load the built dataset (JSONL -> DecisionPoint)", c0 - cl),
        ("render (jinja2 auditor template)", c1 - c0),
        ("encode request JSON", c2 - c1),
        ("decode response JSON", c3 - c2),
        ("parse verdict + build row", c4 - c3),
        ("write + flush predictions row", c5 - c4),
    ]
    print("| stage | CPU ms/decision |")
    print("|---|---:|")
    for name, s in rows:
        print(f"| {name} | {s / n * 1000:.3f} |")
    print(f"| sum of the stages above | {sum(s for _, s in rows) / n * 1000:.3f} |")
    print(f"\n(request body {sum(map(len, bodies)) // n} bytes on average)")
    return {name: sec / n * 1000 for name, sec in rows}


async def _bare(client: str, url: str, n: int, c: int, items: list[JudgeInput]) -> None:
    sem = asyncio.Semaphore(c)
    if client in ("native", "httpx"):
        be = backends.get("openai").factory(judge(url, c, client=client))

        async def one(it: JudgeInput) -> None:
            async with sem:
                await be.adecide(it)

        await asyncio.gather(*(one(it) for it in items))
        await be.aclose()
    elif client == "aiohttp":
        import aiohttp

        be = backends.get("openai").factory(judge(url, c))
        conn = aiohttp.TCPConnector(limit=c)
        async with aiohttp.ClientSession(connector=conn) as session:

            async def one_a(it: JudgeInput) -> None:
                async with (
                    sem,
                    session.post(
                        url + "/chat/completions",
                        data=be.request_body(it),
                        headers={"Content-Type": "application/json", "X-Request-Id": it.dp.id},
                    ) as r,
                ):
                    be._output(await r.read())

            await asyncio.gather(*(one_a(it) for it in items))
    elif client == "openai-sdk":
        import openai

        sdk = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0)

        async def one_o(it: JudgeInput) -> None:
            async with sem:
                await sdk.chat.completions.create(
                    model="mock",
                    messages=list(it.messages),
                    max_tokens=256,
                    temperature=0,
                    extra_headers={"X-Request-Id": it.dp.id},
                )

        await asyncio.gather(*(one_o(it) for it in items))
        await sdk.close()


def clients(n: int, latency: float, c: int) -> dict[str, float]:
    print(
        f"\n## HTTP clients on the bare request path ({n} requests, concurrency {c}, "
        f"{latency * 1000:.0f} ms latency; no runner, no rendering, no parsing)\n"
    )
    print("| client | requests/s | ratio to ideal | client CPU ms/request |")
    print("|---|---:|---:|---:|")
    items = [JudgeInput(dp=dp, messages=render(dp, "auditor").messages) for dp in synthetic(n)]
    candidates = ["native", "httpx"]
    for mod, name in (("aiohttp", "aiohttp"), ("openai", "openai-sdk")):
        try:
            __import__(mod)
            candidates.append(name)
        except ImportError:
            print(f"| {name} | not installed | | |")
    out: dict[str, float] = {}
    for cl in candidates:
        with Server("--latency", str(latency)) as srv:
            t0, c0 = time.perf_counter(), time.process_time()
            asyncio.run(_bare(cl, srv.url, n, c, items))
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"| {cl} | {n / wall:.1f} | {n / wall / (c / latency):.3f} | {cpu / n * 1000:.3f} |",
            flush=True,
        )
        out[cl] = cpu / n * 1000
    return out


def budget(total: float, stages: dict[str, float], bare: float) -> None:
    """Harness CPU per decision at concurrency 32, split into the measured parts."""
    json_ms = stages["encode request JSON"] + stages["decode response JSON"]
    http = bare - json_ms
    rest = total - sum(stages.values()) - http
    print("\n## Harness CPU per decision at concurrency 32, where it goes\n")
    print("| part | CPU ms/decision | share |")
    print("|---|---:|---:|")
    parts = [
        *stages.items(),
        ("HTTP client + event loop (bare native path minus its JSON)", http),
        ("runner + decide.py bookkeeping (the remainder)", rest),
    ]
    for name, ms in parts:
        print(f"| {name} | {ms:.3f} | {ms / total:.0%} |")
    print(f"| total (scaling table) | {total:.3f} | 100% |")


def faults(n: int, latency: float, c: int, tmp: Path) -> bool:
    print(
        f"\n## Fault run: {n} decisions, concurrency {c}, {latency * 1000:.0f} ms latency, "
        "10% HTTP 500, 5% HTTP 429 (Retry-After 0.05 s), 2% hangs (client timeout 1 s); "
        "decide.py with the runner's default retry policy (5 attempts, backoff from 0.5 s)\n"
    )
    want = {dp.id for dp in synthetic(n)}
    with Server(
        "--latency",
        str(latency),
        "--p500",
        "0.10",
        "--p429",
        "0.05",
        "--p-timeout",
        "0.02",
        "--retry-after",
        "0.05",
        "--seed",
        "7",
    ) as srv:
        out, wall, cpu = decide_cli(srv.url, c, tmp, "faults", timeout_s=1.0)
        st = srv.stats()
    rows = [r for r in read_lines(out) if r.get("type") == "decision"]
    per_id = Counter(r["id"] for r in rows)
    last = latest(out)
    lost = want - set(per_id)
    dup = [i for i, k in per_id.items() if k > 1]
    extra = set(per_id) - want
    counts: dict[str, int] = st["counts"]
    mismatch = [i for i, r in last.items() if counts.get(i, 0) != r["attempts"]]
    status = Counter(r["status"] for r in last.values())
    attempts = Counter(r["attempts"] for r in last.values())
    print(
        f"- wall {wall:.2f} s, {n / wall:.1f} decisions/s, harness CPU "
        f"{cpu / n * 1000:.3f} ms/decision"
    )
    print(f"- server: {st['total']} requests, outcomes {dict(sorted(st['outcomes'].items()))}")
    print(
        f"- final statuses: {dict(sorted(status.items()))}; attempts per decision: "
        f"{dict(sorted(attempts.items()))}"
    )
    print(
        f"- decision rows {len(rows)} for {n} decision points: lost {len(lost)}, duplicated "
        f"{len(dup)}, unknown ids {len(extra)}"
    )
    print(
        f"- server requests per id == attempts recorded in its row: "
        f"{n - len(mismatch)}/{n} ids (sum of attempts {sum(r['attempts'] for r in last.values())}"
        f" vs {st['total']} requests)"
    )
    ok = not lost and not dup and not extra and not mismatch and len(last) == n
    print(f"- fault run: {'PASS' if ok else 'FAIL'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--decisions", type=int, default=2000, help="decisions per run (default 2000)")
    ap.add_argument("--latency", type=float, default=0.05, help="server latency in s (0.05)")
    ap.add_argument("--levels", default="1,8,32,128", help="concurrency levels (1,8,32,128)")
    ap.add_argument("--quick", action="store_true", help="500 decisions; levels 8,32,128")
    ap.add_argument(
        "--skip", default="", help="comma list of sections to skip: scaling,split,clients,faults"
    )
    a = ap.parse_args(argv)
    n = 500 if a.quick else a.decisions
    levels = [8, 32, 128] if a.quick else [int(x) for x in a.levels.split(",")]
    skip = set(filter(None, a.skip.split(",")))
    print(
        f"# Runner benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f} at start"
    )
    t0 = time.perf_counter()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as d:
        tmp = Path(d)
        write_build(tmp / "build", synthetic(n))
        cpu_ms = scaling(n, a.latency, levels, tmp) if "scaling" not in skip else {}
        stages = split(n, tmp) if "split" not in skip else {}
        bare = clients(n, a.latency, 32) if "clients" not in skip else {}
        if 32 in cpu_ms and stages and "native" in bare:
            budget(cpu_ms[32], stages, bare["native"])
        if "faults" not in skip:
            ok = faults(n, a.latency, 32, tmp)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.2f} at end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
