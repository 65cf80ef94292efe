"""The job's side of a Hugging Face Jobs run: one shard of a plan, run and uploaded.

A job runs ``python -m bench.jobs worker --results-repo R --plan P --revision SHA --shard K``
(``bench.jobs.plan.job_command``; ``bench/jobs/__main__.py`` parses it and calls ``worker``
here). The worker checks everything it was given against the plan before running the same
runner as a local run (``bench.judging.local.run_judge``), then uploads ``shard-K.jsonl``: the
header of ``bench.jobs.plan.shard_header`` followed by the predictions file as a local run
writes it.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.core.errors import IntegrityError
from bench.jobs.hub import api as hub_api
from bench.jobs.hub import (
    config_hash,
    download,
    fetch_manifest,
    fetch_plan,
    fetch_points,
    select,
)
from bench.jobs.plan import JobsError, refusal_message, refused_configs, shard_header, shard_of
from bench.judging import predictions, specs
from bench.judging.local import run_judge, summary


def worker(results_repo: str, plan_path: str, revision: str, shard: int) -> int:
    """Inside the job: run shard ``shard`` of the plan at ``plan_path`` (results repo at
    ``revision``) with the local runner and upload its file."""
    api = hub_api()
    tmp = Path(tempfile.mkdtemp(prefix="foresight-job-"))
    plan = fetch_plan(results_repo, plan_path, revision, tmp / "plan")
    if plan is None:
        raise JobsError(f"{results_repo}@{revision[:12]} has no {plan_path}")
    k = int(shard)
    if not 0 <= k < plan.shards:
        raise JobsError(f"shard {k} is outside the plan's {plan.shards} shards")
    jf = download(results_repo, plan.judges_file, revision, tmp / "judges")
    if jf is None:
        raise JobsError(f"{plan.judges_file} is missing from {results_repo}")
    spec = specs.select(specs.load(jf), [plan.judge])[0]
    chash = config_hash(spec)
    if chash != plan.config_hash:
        raise IntegrityError(
            f"judge {plan.judge}: this code and judges file give config {chash}, the plan says "
            f"{plan.config_hash} (were templates edited without a commit?); commit and resubmit"
        )
    manifest = fetch_manifest(plan.dataset_repo, plan.dataset_revision, tmp / "m")
    if manifest["version"] != plan.dataset_version:
        raise IntegrityError(
            f"{plan.dataset_repo}@{plan.dataset_revision[:12]} holds dataset "
            f"{manifest['version']}, the plan says {plan.dataset_version}"
        )
    fetched = fetch_points(plan.dataset_repo, plan.dataset_revision, manifest, tmp)
    sel = select(fetched, plan.split, plan.source, plan.limit)
    bad = refused_configs(fetched.configs, {p.source for p in sel.points})
    if bad:
        raise JobsError(refusal_message(plan.judge, bad, fetched.configs))
    mine = [p for p in sel.points if shard_of(p.id, plan.shards) == k]
    if tuple(sorted(p.id for p in mine)) != plan.shard_ids[k]:
        raise IntegrityError(
            f"shard {k}: the dataset gives {len(mine)} ids, the plan expects "
            f"{len(plan.shard_ids[k])} different ones; submit again"
        )
    print(f"judge {plan.judge} shard {k}/{plan.shards}: {len(mine)} decisions of {fetched.version}")
    outcome = run_judge(spec, replace(sel, points=mine), out=tmp / "out", force=True, quiet=True)
    print(summary([outcome]))
    if outcome.state in ("skipped", "failed", "aborted"):
        raise JobsError(f"judge {plan.judge} {outcome.state}: {outcome.reason}")
    # fetched.version is plan.dataset_version: the manifest check above refused any other
    lines = [shard_header(plan, k, revision, len(mine)), *predictions.read_lines(outcome.path)]
    body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in lines)
    info = api.upload_file(
        path_or_fileobj=body.encode("utf-8"),
        path_in_repo=plan.shard_path(k),
        repo_id=plan.results_repo,
        repo_type="dataset",
        commit_message=f"{plan.judge} {plan.dataset_version} shard {k}/{plan.shards}",
    )
    print(f"uploaded {plan.shard_path(k)} at {info.oid}")
    return 0
