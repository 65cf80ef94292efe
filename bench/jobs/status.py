"""Watching a Hugging Face Jobs run: this benchmark's jobs, which are stuck or failed, and
resubmitting the stuck ones (``decide.py --on hf-jobs --status``; docs/hf-jobs.md).

``JobView`` is a job as its labels describe it (judge, dataset version, config hash, shard);
``latest_per_shard`` and ``is_stuck`` are pure, so submission (which skips shards whose job is
still going) and the status table apply the same rules.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.jobs.hub import api as hub_api
from bench.jobs.hub import namespace
from bench.jobs.plan import BENCHMARK, parse_duration
from bench.judging.protocol import JudgeSpec


@dataclass(frozen=True)
class JobView:
    """One job as --status shows it."""

    id: str
    """Job id."""
    judge: str
    """From the label."""
    dataset_version: str
    """From the label."""
    config_hash: str
    """From the label."""
    shard: int
    """From the label (-1 when absent)."""
    shards: int
    """From the label (0 when absent)."""
    stage: str
    """SCHEDULING / RUNNING / COMPLETED / ERROR / CANCELED / DELETED."""
    message: str
    """Status message."""
    created: float
    """Creation time, epoch seconds."""
    scheduling_s: float | None
    """Seconds spent scheduling, when known."""
    running_s: float | None
    """Seconds spent running, when known."""
    url: str = ""
    """Web page of the job."""

    @property
    def key(self) -> tuple[str, str, str, int]:
        """Which shard of which run this job serves."""
        return (self.judge, self.dataset_version, self.config_hash, self.shard)


def job_view(info: Any) -> JobView:
    """A JobView from huggingface_hub's JobInfo."""
    labels = info.labels or {}
    d = info.durations
    created = info.created_at.timestamp() if info.created_at else 0.0

    def _int(v: Any, default: int) -> int:
        try:
            return int(v)
        except (TypeError, ValueError):
            return default

    return JobView(
        id=info.id,
        judge=labels.get("judge", "?"),
        dataset_version=labels.get("dataset_version", "?"),
        config_hash=labels.get("config_hash", "?"),
        shard=_int(labels.get("shard"), -1),
        shards=_int(labels.get("shards"), 0),
        stage=str(getattr(info.status.stage, "value", info.status.stage)),
        message=info.status.message or "",
        created=created,
        scheduling_s=getattr(d, "scheduling_secs", None),
        running_s=getattr(d, "running_secs", None),
        url=getattr(info, "url", ""),
    )


def latest_per_shard(jobs: Iterable[JobView]) -> dict[tuple[str, str, str, int], JobView]:
    """The newest job of each (judge, version, config, shard)."""
    out: dict[tuple[str, str, str, int], JobView] = {}
    for j in sorted(jobs, key=lambda j: (j.created, j.id)):
        out[j.key] = j
    return out


def is_stuck(job: JobView, limit_s: float, now: float) -> bool:
    """True when the job is still SCHEDULING after ``limit_s`` seconds."""
    if job.stage != "SCHEDULING":
        return False
    waited = job.scheduling_s if job.scheduling_s is not None else now - job.created
    return max(waited, now - job.created) > limit_s


def list_views(client: Any, ns: str, labels: Mapping[str, str]) -> list[JobView]:
    """The jobs of namespace ``ns`` that carry all ``labels``."""
    return [job_view(j) for j in client.list_jobs(labels=dict(labels), namespace=ns)]


# --------------------------------------------------------------------------- the table


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    x = int(x)
    return f"{x // 3600}h{x % 3600 // 60:02d}m" if x >= 3600 else f"{x // 60}m{x % 60:02d}s"


def status(specs: Sequence[JudgeSpec] | None, args: argparse.Namespace) -> int:
    """List this benchmark's jobs; report stuck and failed ones (and --resubmit-stuck)."""
    api = hub_api()
    ns = namespace(api)
    limit_s = parse_duration(args.stuck_after)
    wanted = {s.id for s in specs} if specs and args.judge else None
    views = [
        v
        for v in list_views(api, ns, {"benchmark": BENCHMARK})
        if wanted is None or v.judge in wanted
    ]
    latest = latest_per_shard(views)
    now = time.time()
    print(
        f"{'job':<26} {'judge':<20} {'version':<16} {'shard':>7} {'stage':<11} "
        f"{'sched':>7} {'run':>7}  note"
    )
    stuck: list[JobView] = []
    failed: list[JobView] = []
    for j in sorted(views, key=lambda j: (j.judge, j.dataset_version, j.shard, j.created)):
        note = ""
        if latest.get(j.key) is not j:
            note = "superseded"
        elif is_stuck(j, limit_s, now):
            note = f"STUCK: scheduling for more than {args.stuck_after}"
            stuck.append(j)
        elif j.stage == "ERROR":
            note = f"FAILED {j.message}".strip()
            failed.append(j)
        shard = f"{j.shard}/{j.shards}" if j.shard >= 0 else "-"
        sched = j.scheduling_s if j.scheduling_s is not None else now - j.created
        print(
            f"{j.id:<26} {j.judge:<20} {j.dataset_version[:16]:<16} {shard:>7} {j.stage:<11} "
            f"{_fmt_s(sched):>7} {_fmt_s(j.running_s):>7}  {note}"
        )
    print(f"{len(views)} job(s); {len(stuck)} stuck, {len(failed)} failed")
    for j in failed:
        print(f"--- last log lines of {j.id} ({j.judge} shard {j.shard}) ---")
        try:
            tail = list(api.fetch_job_logs(job_id=j.id, namespace=ns, tail=args.log_tail))
        except Exception as e:  # noqa: BLE001 - a log fetch failure must not hide the table
            tail = [f"(logs unavailable: {e})"]
        for line in tail[-args.log_tail :]:
            print(f"  {line}")
    if stuck and args.resubmit_stuck:
        for j in stuck:
            api.cancel_job(job_id=j.id, namespace=ns)
            new = api.rerun_job(job_id=j.id, namespace=ns)
            print(f"resubmitted {j.judge} shard {j.shard}: canceled {j.id}, new job {new.id}")
    elif stuck:
        print("rerun with --resubmit-stuck to cancel and resubmit the stuck jobs")
    return 0
