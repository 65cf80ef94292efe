"""The soak benchmark's short version (benchmarks/bench_soak.py; issue 25): 300 decisions against
the faulty mock server, decide.py killed twice (SIGKILL, then SIGTERM) and resumed each time,
ending with exactly one verdict per id, identical to an uninterrupted run's."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.core.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from bench_soak import soak  # noqa: E402


def test_killed_and_resumed_runs_end_with_one_verdict_per_id(tmp_path: Path) -> None:
    res = soak(300, 2, tmp_path, seed=1, concurrency=8, limit_s=120)
    assert dict(res.kills) == {"SIGKILL": 1, "SIGTERM": 1} and res.early == 0, res.lines()
    assert res.resumes == 2 and res.sigterm_ok == 1, res.lines()
    assert res.takeovers == 1, res.lines()  # the SIGKILL left its lock file: taken over, said
    assert res.answered == 300 and res.duplicates == 0 and res.lost == 0, res.lines()
    assert res.mismatches == 0 and res.ok, res.lines()
