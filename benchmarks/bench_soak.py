"""Soak benchmark: decide.py killed at random and resumed, against a faulty mock server.

A synthetic dataset (the project's own filler text, built in a temporary folder) is judged by
the ``openai`` backend through ``python bench/decide.py`` against the mock OpenAI-compatible
server (``tests/fakes/mockserver.py``, its own process) with faults: HTTP 500s, 429s with
Retry-After, and hangs beyond the client timeout. The mock answers deterministically per id.
The decide process is killed at random points (SIGKILL and SIGTERM in turn) ``--kills`` times and
resumed each time; then the file must hold exactly one verdict per id, identical to an
uninterrupted run's (a separate run on a fresh server with the same faults). Not CI: the
short version (300 decisions, 2 kills) runs in tests/test_soak.py.

    nice python benchmarks/bench_soak.py                          # 20,000 decisions, 5 kills
    python benchmarks/bench_soak.py --decisions 300 --kills 2     # the short version

Prints kills (by signal), resumes, ids, duplicate ids (decided twice), lost ids, mismatches
against the uninterrupted run, stale locks taken over, and wall times; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_runner_openai import Server, synthetic, write_build  # noqa: E402

from bench.judging.predictions import latest, read_lines  # noqa: E402

DECIDE = Path(__file__).resolve().parents[1] / "bench" / "decide.py"
"""The command under test, run as a separate process so it can be killed."""

VERDICT_FIELDS = ("status", "act", "binary", "risk", "fail", "harm", "src", "cite", "reason", "raw")
"""The fields two runs must agree on per id (timings and attempts legitimately differ)."""


@dataclass(frozen=True)
class Faults:
    """The mock server's behaviour."""

    latency: float = 0.01
    """Seconds before each answer."""
    p500: float = 0.05
    """Rate of HTTP 500."""
    p429: float = 0.03
    """Rate of HTTP 429 (Retry-After ``retry_after``)."""
    p_hang: float = 0.003
    """Rate of hangs past the client timeout."""
    retry_after: float = 0.05
    """The Retry-After the 429s send."""
    timeout_s: float = 1.0
    """The client's timeout (a hang costs this much)."""
    seed: int = 11
    """The mock's fault seed."""

    def args(self) -> list[str]:
        """The mock server's command-line options."""
        return ["--latency", str(self.latency), "--p500", str(self.p500),
                "--p429", str(self.p429), "--p-timeout", str(self.p_hang),
                "--retry-after", str(self.retry_after), "--seed", str(self.seed)]  # fmt: skip


@dataclass
class Result:
    """What the soak found."""

    ids: int
    """Decision points in the dataset."""
    kills: Counter[str] = field(default_factory=Counter)
    """Kills sent, by signal name."""
    early: int = 0
    """Runs that finished before their kill could be sent (not counted as kills)."""
    resumes: int = 0
    """Runs started on a file a killed run left."""
    sigterm_ok: int = 0
    """SIGTERM'd runs that exited 143 saying 'interrupted: N done; rerun to resume'."""
    takeovers: int = 0
    """Stale locks taken over (each SIGKILL leaves one)."""
    error_passes: int = 0
    """Extra runs needed to retry decisions that ended in error after all their retries."""
    answered: int = 0
    """Ids with a final verdict in the soaked file."""
    duplicates: int = 0
    """Ids decided more than once (more than one non-error line)."""
    lost: int = 0
    """Ids with no verdict."""
    mismatches: int = 0
    """Ids whose final verdict differs from the uninterrupted run's."""
    reference_errors: int = 0
    """Ids the uninterrupted run left in error (retried by a rerun there too)."""
    soak_s: float = 0.0
    """Wall time of the killed-and-resumed runs together."""
    reference_s: float = 0.0
    """Wall time of the uninterrupted run."""

    @property
    def ok(self) -> bool:
        """One verdict per id, none lost, none duplicated, all equal to the reference."""
        return (
            self.answered == self.ids
            and not self.duplicates
            and not self.lost
            and not self.mismatches
            and self.resumes == sum(self.kills.values())
        )

    def lines(self) -> list[str]:
        """The printed figures."""
        kills = ", ".join(f"{k} {v}" for k, v in sorted(self.kills.items())) or "none"
        return [
            f"- kills: {sum(self.kills.values())} ({kills}); runs that ended before their kill: "
            f"{self.early}",
            f"- resumes: {self.resumes}; SIGTERM exits 143 with the interrupted line: "
            f"{self.sigterm_ok}/{self.kills['SIGTERM']}; stale locks taken over: {self.takeovers}",
            f"- ids: {self.ids}; answered {self.answered}; duplicate ids {self.duplicates}; "
            f"lost {self.lost}; mismatches with the uninterrupted run {self.mismatches}",
            f"- reruns for decisions that exhausted their retries: soak {self.error_passes}, "
            f"uninterrupted run {self.reference_errors} id(s)",
            f"- wall: soak {self.soak_s:.1f} s, uninterrupted run {self.reference_s:.1f} s",
            f"- soak: {'PASS' if self.ok else 'FAIL'}",
        ]


def judges_toml(path: Path, url: str, concurrency: int, timeout_s: float) -> Path:
    """One ``openai`` judge pointed at the mock."""
    path.write_text(
        f'[[judge]]\nid = "soak"\nbackend = "openai"\nmodel = "mock"\nprompt = "auditor"\n'
        f'parser = "boxed"\nconcurrency = {concurrency}\n[judge.params]\nbase_url = "{url}"\n'
        f"timeout_s = {timeout_s}\nmax_tokens = 256\n",
        encoding="utf-8",
    )
    return path


def decide_cmd(judges: Path, build: Path, out: Path) -> list[str]:
    """``python bench/decide.py`` over the test split of the soak dataset."""
    return [sys.executable, str(DECIDE), "--judges", str(judges), "--build-dir", str(build),
            "--out", str(out), "--split", "test", "--quiet"]  # fmt: skip


class Lines:
    """Counts the lines of a growing file by reading only what was appended (a resumed run may
    cut a torn last line: then it counts again from the start)."""

    def __init__(self, path_glob: tuple[Path, str]) -> None:
        self.root, self.pattern = path_glob
        self.offset = 0
        self.count = 0

    def now(self) -> int:
        """Complete lines in the file now."""
        files = list(self.root.glob(self.pattern))
        if not files:
            return 0
        size = files[0].stat().st_size
        if size < self.offset:
            self.offset = self.count = 0
        with files[0].open("rb") as f:
            f.seek(self.offset)
            data = f.read(size - self.offset)
        cut = data.rfind(b"\n") + 1
        self.count += data[:cut].count(b"\n")
        self.offset += cut
        return self.count


def _run_to_end(cmd: list[str], limit_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=limit_s, check=False)


def killed_runs(
    cmd: list[str], out: Path, n: int, kills: int, rng: random.Random, res: Result, limit_s: float
) -> None:
    """Start decide, kill it at a random point (SIGKILL, SIGTERM in turn), resume; ``kills``
    times, then run it to the end (more runs only to retry decisions that ended in error)."""
    lines = Lines((out, "soak/*/*.jsonl"))
    after_kill = False
    for k in range(kills):
        sig = signal.SIGKILL if k % 2 == 0 else signal.SIGTERM
        before = lines.now()
        left = max(1, n + 2 * (k + 1) - before)
        target = before + rng.randint(1, max(1, 2 * left // (kills - k + 2)))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + limit_s
        while proc.poll() is None and lines.now() < target and time.monotonic() < deadline:
            time.sleep(0.01)
        res.resumes += after_kill
        if proc.poll() is not None:
            res.early += 1
            after_kill = False
        else:
            proc.send_signal(sig)
            res.kills[signal.Signals(sig).name] += 1
            after_kill = True
        stdout, stderr = proc.communicate(timeout=limit_s)
        res.takeovers += stderr.count("took over the stale lock")
        if sig == signal.SIGTERM and proc.returncode == 128 + sig:
            res.sigterm_ok += "interrupted:" in stdout and "rerun to resume" in stdout
    last = _run_to_end(cmd, limit_s)
    res.resumes += after_kill
    res.takeovers += last.stderr.count("took over the stale lock")
    for _ in range(3):  # a decision whose every attempt failed is retried by a rerun
        (path,) = out.glob("soak/*/*.jsonl")
        if all(r.get("status") != "error" for r in latest(path).values()):
            break
        res.error_passes += 1
        _run_to_end(cmd, limit_s)


def check(out: Path, ref_out: Path, want: set[str], res: Result) -> None:
    """Fill the id figures: one verdict per id, equal to the uninterrupted run's."""
    (path,) = out.glob("soak/*/*.jsonl")
    (ref_path,) = ref_out.glob("soak/*/*.jsonl")
    rows = [r for r in read_lines(path) if r.get("type") == "decision"]
    decided = Counter(r["id"] for r in rows if r.get("status") != "error")
    final = latest(path)
    ref = latest(ref_path)
    res.answered = sum(1 for i in want if i in final and final[i].get("status") != "error")
    res.duplicates = sum(1 for c in decided.values() if c > 1)
    res.lost = len(want - set(final))
    res.reference_errors = sum(1 for r in ref.values() if r.get("status") == "error")
    res.mismatches = sum(
        1
        for i in want
        if i in final and i in ref and any(final[i].get(f) != ref[i].get(f) for f in VERDICT_FIELDS)
    )


def soak(
    n: int,
    kills: int,
    tmp: Path,
    *,
    seed: int = 0,
    faults: Faults = Faults(),
    concurrency: int = 32,
    limit_s: float = 900.0,
) -> Result:
    """The whole soak in ``tmp``: the killed-and-resumed runs, the uninterrupted run, the check."""
    dps = synthetic(n)
    build = write_build(tmp / "build", dps)
    res = Result(ids=n)
    rng = random.Random(seed)
    with Server(*faults.args()) as srv:
        cmd = decide_cmd(judges_toml(tmp / "soak.toml", srv.url, concurrency, faults.timeout_s),
                         build, tmp / "soak")  # fmt: skip
        t0 = time.perf_counter()
        killed_runs(cmd, tmp / "soak", n, kills, rng, res, limit_s)
        res.soak_s = time.perf_counter() - t0
    with Server(*faults.args()) as srv:  # a fresh server: the same faults from the start
        ref = judges_toml(tmp / "ref.toml", srv.url, concurrency, faults.timeout_s)
        t0 = time.perf_counter()
        cmd = decide_cmd(ref, build, tmp / "ref")
        _run_to_end(cmd, limit_s)
        for _ in range(3):
            (path,) = (tmp / "ref").glob("soak/*/*.jsonl")
            if all(r.get("status") != "error" for r in latest(path).values()):
                break
            _run_to_end(cmd, limit_s)
        res.reference_s = time.perf_counter() - t0
    check(tmp / "soak", tmp / "ref", {dp.id for dp in dps}, res)
    return res


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print its figures; 1 when it fails."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--decisions", type=int, default=20_000, help="decision points (20000)")
    ap.add_argument("--kills", type=int, default=5, help="random kills, each resumed (5)")
    ap.add_argument("--concurrency", type=int, default=32, help="judge concurrency (32)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill points (0)")
    a = ap.parse_args(argv)
    f = Faults()
    print(
        f"# Soak: {a.decisions} decisions, {a.kills} random kills (SIGKILL and SIGTERM in turn), "
        f"concurrency {a.concurrency}; mock: {f.latency * 1000:.0f} ms latency, "
        f"{f.p500:.0%} HTTP 500, {f.p429:.0%} HTTP 429 (Retry-After {f.retry_after} s), "
        f"{f.p_hang:.1%} hangs (client timeout {f.timeout_s} s); python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as d:
        res = soak(a.decisions, a.kills, Path(d), seed=a.seed, concurrency=a.concurrency)
    print("\n".join(res.lines()))
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
