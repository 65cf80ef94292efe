"""Collecting a Hugging Face Jobs run: download each shard, verify it against the plan, merge it.

``decide.py --on hf-jobs --collect`` reads every plan of a judge in the results repository,
checks each shard file with ``bench.jobs.plan.check_shard`` (config hash, dataset version, ids:
the planned ones, each once), and appends the verified shards to
``leaderboards/predictions/<judge>/<version>/<config_hash>.jsonl``, one run session per shard,
skipping those already merged (by blob id). The merge holds the file's lock
(``bench.core.lock``) as ``decide.py`` does, so it never interleaves with a local run
(``--wait`` waits for that run). Submission uses ``check_all`` too, to resubmit only
the shards not done. See docs/hf-jobs.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError
from bench.core.jsonl import read_jsonl
from bench.jobs.hub import api as hub_api
from bench.jobs.hub import config_hash, download, fetch_plan, list_folder
from bench.jobs.plan import JobsError, Plan, ShardCheck, check_shard, shard_lines_for_merge
from bench.judging import predictions
from bench.judging.local import WAIT_HINT
from bench.judging.protocol import JudgeSpec


@dataclass(frozen=True)
class CollectResult:
    """What --collect did for one plan."""

    plan: Plan
    """The plan collected."""
    checks: tuple[ShardCheck, ...]
    """One per shard, in order."""
    merged: tuple[int, ...]
    """Shards appended to the local predictions file this time."""
    already: tuple[int, ...]
    """Verified shards that were already in the local file."""
    path: str
    """The local predictions file."""

    @property
    def todo(self) -> tuple[int, ...]:
        """Shards a resubmission must run."""
        return tuple(c.shard for c in self.checks if c.state != "ok")


# --------------------------------------------------------------------------- verify and merge


def check_all(
    api: Any, plan: Plan, revision: str, into: Path
) -> tuple[list[ShardCheck], dict[int, tuple[list[dict[str, Any]], str]]]:
    """Download and check every shard of a plan at a results revision: the checks, one per
    shard, and the lines and blob id of each verified one."""
    blobs: dict[str, str] = {}
    for f in list_folder(api, plan.results_repo, plan.folder, revision):
        blobs[f.path] = getattr(f, "blob_id", "") or ""
    checks: list[ShardCheck] = []
    good: dict[int, tuple[list[dict[str, Any]], str]] = {}
    for k in range(plan.shards):
        path = plan.shard_path(k)
        lines = None
        if path in blobs:
            p = download(plan.results_repo, path, revision, into)
            lines = list(read_jsonl(p)) if p is not None else None
        c = check_shard(lines, plan, k)
        checks.append(c)
        if c.state == "ok" and lines is not None:
            good[k] = (lines, blobs[path])
    return checks, good


def collect_one(
    api: Any, spec: JudgeSpec, args: argparse.Namespace, tmp: Path
) -> list[CollectResult]:
    """Collect every plan of one judge in the results repo (or only --version's)."""
    revision = api.dataset_info(args.results_repo).sha
    chash = config_hash(spec)
    plans = [
        f.path
        for f in list_folder(api, args.results_repo, f"predictions/{spec.id}", revision)
        if f.path.endswith("/plan.json")
        and (not args.version or f.path == f"predictions/{spec.id}/{args.version}/plan.json")
    ]
    if not plans:
        raise JobsError(
            f"no plan for judge {spec.id!r} in {args.results_repo}: submit it first with "
            f"--on hf-jobs --judge {spec.id}"
        )
    results = []
    for pp in sorted(plans):
        plan = fetch_plan(args.results_repo, pp, revision, tmp / "plans")
        assert plan is not None  # listed at this revision a moment ago
        if plan.config_hash != chash:
            print(
                f"{spec.id} {plan.dataset_version}: the remote run is of config {plan.config_hash}, "
                f"judges.toml now gives {chash}: not collected (submit again to run this config)"
            )
            continue
        checks, good = check_all(api, plan, revision, tmp / "shards" / plan.dataset_version)
        path = predictions.path_for(args.out, spec.id, plan.dataset_version, plan.config_hash)
        merged, already = [], []
        if good:  # no file is opened when no shard verified
            # the lock is held from reading what is merged to the last line appended, so a
            # local decide.py (or another collect) never interleaves with this merge
            wait = bool(getattr(args, "wait", False))
            with predictions.Writer(path, wait=wait, hint=WAIT_HINT) as w:
                have = merged_blobs(path)
                for k, (lines, blob) in sorted(good.items()):
                    if blob and blob in have:
                        already.append(k)
                        continue
                    for row in shard_lines_for_merge(lines, plan, k, blob):
                        w.write(row)
                    merged.append(k)
        results.append(CollectResult(plan, tuple(checks), tuple(merged), tuple(already), str(path)))
    return results


def collect(specs: Sequence[JudgeSpec], args: argparse.Namespace) -> int:
    """Download, verify and merge the shards of each judge; exit 1 when any shard is not done."""
    if not args.results_repo:
        raise ConfigError("--collect needs --results-repo ORG/NAME")
    api = hub_api()
    all_done = True
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            for r in collect_one(api, spec, args, Path(tmp) / spec.id):
                p = r.plan
                ok = sum(c.state == "ok" for c in r.checks)
                print(
                    f"{p.judge} {p.dataset_version} [{p.config_hash}]: {ok}/{p.shards} shard(s) "
                    f"verified; merged {list(r.merged)}, already merged {list(r.already)} -> {r.path}"
                )
                for c in r.checks:
                    if c.state != "ok":
                        print(f"  shard {c.shard}: {c.state.upper()}: {'; '.join(c.problems)}")
                    elif c.errors:
                        print(
                            f"  shard {c.shard}: {c.errors} decision(s) errored (retried by a local rerun)"
                        )
                if r.todo:
                    all_done = False
                    print(
                        f"  missing shards {list(r.todo)}: submit again with the same options "
                        f"(python bench/decide.py --on hf-jobs --judge {p.judge} --shards {p.shards} "
                        f"--results-repo {p.results_repo} --dataset-repo {p.dataset_repo} "
                        f"--dataset-revision {p.dataset_revision}) to run only those"
                    )
    return 0 if all_done else 1


def merged_blobs(path: str | os.PathLike[str]) -> set[str]:
    """Blob ids of remote shards already appended to a local predictions file."""
    return {
        str(r["remote"]["blob"])
        for r in predictions.read_lines(path)
        if r.get("type") == "run" and isinstance(r.get("remote"), dict) and r["remote"].get("blob")
    }
