"""Run judges on Hugging Face Jobs: sharded, labelled, verified and collected.

    python bench/decide.py --on hf-jobs --judge ID --results-repo ORG/RESULTS --dataset-repo ORG/DATA
                           [--dataset-revision SHA] [--flavor a10g-large] [--shards N] [--timeout 2h]
    python bench/decide.py --on hf-jobs --status [--judge ID] [--stuck-after 30m] [--resubmit-stuck]
    python bench/decide.py --on hf-jobs --collect --judge ID --results-repo ORG/RESULTS

**Submit.** The dataset is read from the Hub at a pinned revision (the current ``main`` sha when
none is given). Its ``manifest.json`` names each config's licence: a config that may not be
redistributed (R-Judge, licence "none") is refused before anything is downloaded or submitted; it
runs locally only. The selected decision ids are partitioned into ``N`` shards by
``sha256(id) mod N``, a partition that depends only on the id. One commit to the results dataset
repository then carries what the jobs need: a wheel of this project built from ``git archive
HEAD`` (the job cannot see this machine and the commit may not be pushed anywhere, so a git URL
would not do; a wheel pins the exact commit and needs no git in the image), the judges file, and
``predictions/<judge>/<version>/plan.json`` with the expected ids of every shard. One job per shard
is created with ``HfApi.run_job`` on a pinned image. Secrets go by name: ``HF_TOKEN`` and the
judge's ``api_key_env`` are read from this environment at submit time and sent as job secrets,
never written to a file, a label or the command. Labels: ``benchmark=foresight-bench``, judge,
dataset version, config hash, shard, shards, commit.

**The job** installs ``huggingface_hub`` and the wheel (with the backend's extra), then runs
``python -m bench.jobs worker``: it reads the plan at the pinned results revision, checks that its
judges row gives the planned config hash, downloads the dataset at the pinned revision, checks the
version and that its shard's ids are the planned ones, runs the same runner as a local run
(``bench.judging.local.run_judge``) on that shard, and uploads ``predictions/<judge>/<version>/
shard-K.jsonl``. Setting ``FORESIGHT_JOBS_SKIP_INSTALL=1`` skips the install step: the tests'
emulated jobs use the package already installed here.

**Status** lists this benchmark's jobs (by label) with stage, durations and shard; the latest job
of a shard in SCHEDULING longer than ``--stuck-after`` is reported stuck and ``--resubmit-stuck``
cancels and reruns it; a failed job shows the tail of its logs.

**Collect** downloads the shards, checks each one's config hash, dataset version and ids (the
planned ones, each once), appends the verified shards to ``leaderboards/predictions/<judge>/
<version>/<config_hash>.jsonl`` (one run session per shard), and names the shards that are
missing, incomplete or refused. Submitting again with the same plan runs only those.

**Layout.** This module submits and hooks ``--on hf-jobs`` into ``decide.py``
(``add_arguments``, ``run_remote``). ``bench.jobs.plan`` holds the records and pure rules (plan,
sharding, licences, labels, the job command, shard files and their verification),
``bench.jobs.hub`` the Hub calls every side shares, ``bench.jobs.status`` --status,
``bench.jobs.collect`` --collect, and ``bench.jobs.worker`` what runs inside a job
(``python -m bench.jobs worker``, ``bench/jobs/__main__.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError, DataError
from bench.core.jsonl import content_hash
from bench.core.paths import JUDGES_TOML, REPO_ROOT
from bench.jobs.collect import check_all, collect
from bench.jobs.hub import api as hub_api
from bench.jobs.hub import (
    config_hash,
    fetch_manifest,
    fetch_plan,
    fetch_points,
    list_folder,
    namespace,
    select,
    token,
)
from bench.jobs.plan import (
    ACTIVE,
    DEFAULT_FLAVOR,
    DEFAULT_IMAGE,
    JobsError,
    Plan,
    job_command,
    job_labels,
    job_name,
    parse_duration,
    partition,
    refusal_message,
    refused_configs,
    run_labels,
    secret_names,
)
from bench.jobs.status import latest_per_shard, list_views, status
from bench.judging import backends
from bench.judging.protocol import JudgeSpec

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- submit


def _git(*args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=False
    )
    if out.returncode != 0:
        raise JobsError(f"git {' '.join(args)} failed: {out.stderr.strip()}; run from a checkout")
    return out.stdout


def build_wheel(out_dir: Path, commit: str = "HEAD") -> Path:
    """A wheel of this project at ``commit`` (from ``git archive``, so uncommitted edits are
    left out), built offline with the installed setuptools."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "src.tar"
        subprocess.run(
            ["git", "archive", "--format=tar", "-o", str(tar), commit],
            cwd=REPO_ROOT,
            check=True,
            timeout=60,
        )
        src = Path(tmp) / "src"
        src.mkdir()
        subprocess.run(["tar", "-xf", str(tar), "-C", str(src)], check=True, timeout=60)
        return wheel_of(src, out_dir)


def wheel_of(src: Path, out_dir: Path) -> Path:
    """Build the project's wheel from the source folder ``src`` into ``out_dir``, offline, with
    the installed setuptools; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    res = subprocess.run(
        [*pip, "--disable-pip-version-check", "-w", str(out_dir), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if res.returncode != 0:
        raise JobsError(f"building the wheel failed: {res.stderr.strip()[-800:]}")
    wheels = sorted(out_dir.glob("foresight_bench-*.whl"))
    if not wheels:
        raise JobsError(f"no wheel appeared in {out_dir}")
    return wheels[-1]


def _active_shards(api: Any, ns: str, plan: Plan) -> set[int]:
    """Shards of this plan whose latest job is still scheduling or running."""
    views = list_views(api, ns, run_labels(plan))
    return {j.shard for j in latest_per_shard(views).values() if j.stage in ACTIVE}


def _secrets(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for n in names:
        v = token() if n == "HF_TOKEN" else os.environ.get(n)
        if not v:
            raise JobsError(f"the job needs the secret {n}: set {n} in this environment")
        out[n] = v
    return out


def _existing_plan(api: Any, results_repo: str, path: str, tmp: Path) -> tuple[Plan, str] | None:
    """The plan at the results repo's main, with that commit's sha; None when absent."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        sha = api.dataset_info(results_repo).sha
    except RepositoryNotFoundError:
        return None
    if not sha:
        return None
    plan = fetch_plan(results_repo, path, sha, tmp / "plan")
    return None if plan is None else (plan, sha)


def _plan_for(
    spec: JudgeSpec,
    args: argparse.Namespace,
    *,
    ids: Sequence[str],
    version: str,
    revision: str,
    commit: str,
    judges_text: bytes,
    shards: int,
) -> Plan:
    """The plan of one judge's run (its wheel path is filled in when it is uploaded)."""
    return Plan(
        judge=spec.id,
        config_hash=config_hash(spec),
        dataset_version=version,
        dataset_repo=args.dataset_repo,
        dataset_revision=revision,
        results_repo=args.results_repo,
        commit=commit,
        wheel="",
        judges_file=f"jobs/{commit[:12]}/judges-{content_hash(judges_text.decode())}.toml",
        backend_extra=backends.get(spec.backend).job_extra,
        split=args.split,
        source=args.source,
        limit=args.limit,
        shards=shards,
        shard_ids=partition(ids, shards),
        image=args.image or DEFAULT_IMAGE,
        flavor=args.flavor or DEFAULT_FLAVOR,
        timeout=args.timeout,
        secrets=secret_names(spec),
    )


def _resume(api: Any, ns: str, plan: Plan, plan_rev: str, tmp: Path) -> list[int]:
    """Shards of an unchanged plan still to submit (not verified done, not running)."""
    done = {c.shard for c in check_all(api, plan, plan_rev, tmp / "shards")[0] if c.state == "ok"}
    busy = _active_shards(api, ns, plan)
    todo = [k for k in range(plan.shards) if k not in done | busy]
    print(
        f"{plan.judge}: plan {plan.path} unchanged; {len(done)} shard(s) done, "
        f"{len(busy)} running or scheduled, submitting {len(todo)}: {todo}"
    )
    return todo


def _upload_plan(
    api: Any, plan: Plan, wheel: Path, judges_text: bytes, version: str
) -> tuple[Plan, str]:
    """One commit to the results repo: the wheel, the judges file and plan.json (stale shard
    files of an earlier plan deleted). Returns the plan with its wheel path and the commit."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    plan = Plan(**{**asdict(plan), "wheel": f"jobs/{plan.commit[:12]}/{wheel.name}"})
    ops: list[Any] = [
        CommitOperationAdd(plan.wheel, str(wheel)),
        CommitOperationAdd(plan.judges_file, judges_text),
        CommitOperationAdd(plan.path, (json.dumps(plan.to_dict(), indent=1) + "\n").encode()),
    ]
    ops += [CommitOperationDelete(p) for p in _stale_shards(api, plan.results_repo, plan.folder)]
    info = api.create_commit(
        plan.results_repo,
        ops,
        commit_message=f"plan {plan.judge} on {version} ({plan.shards} shards)",
        repo_type="dataset",
    )
    return plan, str(info.oid)


def _run_shards(
    api: Any, ns: str, plan: Plan, plan_rev: str, todo: Sequence[int], secrets: dict[str, str]
) -> int:
    """One job per shard in ``todo``; returns how many were created."""
    import huggingface_hub

    for k in todo:
        job = api.run_job(
            image=plan.image,
            command=job_command(plan, k, plan_rev, huggingface_hub.__version__),
            env={"FORESIGHT_JOB": "1"},
            secrets=secrets,
            flavor=plan.flavor,
            timeout=plan.timeout,
            name=job_name(plan, k),
            labels=job_labels(plan, k),
            namespace=ns,
        )
        print(f"  shard {k}: job {job.id} {job.url}")
    return len(todo)


def _selected_ids(args: argparse.Namespace, specs: Sequence[JudgeSpec], revision: str, tmp: Path) -> tuple[str, list[str]]:  # fmt: skip
    """(dataset version, the selected decision ids) of the pushed dataset at ``revision``; a
    config whose licence forbids redistribution is refused before anything runs."""
    manifest = fetch_manifest(args.dataset_repo, revision, tmp / "m")
    version = str(manifest["version"])
    if args.version and args.version != version:
        raise DataError(
            f"{args.dataset_repo}@{revision[:12]} holds dataset {version}, not "
            f"{args.version}: pass the revision that holds it with --dataset-revision"
        )
    configs = dict(manifest.get("configs") or {})
    needed = [args.source] if args.source else list(configs)
    for spec in specs:
        bad = refused_configs(configs, needed)
        if bad:
            raise JobsError(refusal_message(spec.id, bad, configs))
    fetched = fetch_points(args.dataset_repo, revision, manifest, tmp)
    sel = select(fetched, args.split, args.source, args.limit)
    bad = refused_configs(configs, {p.source for p in sel.points})
    if bad:  # the manifest and the points disagree: refuse all the same
        raise JobsError(refusal_message(specs[0].id if specs else "?", bad, configs))
    ids = [p.id for p in sel.points]
    if not ids:
        raise DataError("no decision points selected: check --split, --source and --limit")
    return version, ids


def submit(
    specs: Sequence[JudgeSpec], args: argparse.Namespace, *, wheel: Path | None = None
) -> int:
    """Submit one job per shard of each judge (only the shards not done or running when an
    identical plan is already in the results repository)."""
    if not args.results_repo or not args.dataset_repo:
        raise ConfigError(
            "--on hf-jobs needs --results-repo ORG/NAME (where predictions land) and "
            "--dataset-repo ORG/NAME (the pushed dataset)"
        )
    shards = int(args.shards or 1)
    if shards < 1:
        raise ConfigError(f"--shards must be at least 1, not {shards}")
    parse_duration(args.timeout)
    api = hub_api()
    ns = namespace(api)
    revision = args.dataset_revision or api.dataset_info(args.dataset_repo).sha
    commit = _git("rev-parse", "HEAD").strip()
    if _git("status", "--porcelain", "--untracked-files=no").strip():
        log.warning("uncommitted changes are not in the job: it runs commit %s", commit[:12])
    judges_text = Path(args.judges or JUDGES_TOML).read_bytes()
    submitted = 0
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        version, ids = _selected_ids(args, specs, revision, tmp)
        for spec in specs:
            plan = _plan_for(
                spec, args, ids=ids, version=version, revision=revision, commit=commit,
                judges_text=judges_text, shards=shards,
            )  # fmt: skip
            secrets = _secrets(plan.secrets)
            api.create_repo(args.results_repo, repo_type="dataset", private=True, exist_ok=True)
            old = _existing_plan(api, args.results_repo, plan.path, tmp / spec.id)
            same = (
                old is not None
                and (old[0].config_hash, old[0].dataset_revision, old[0].selection_digest())
                == (plan.config_hash, plan.dataset_revision, plan.selection_digest())
                and not getattr(args, "force", False)
            )
            if same and old is not None:
                plan, plan_rev = old
                todo = _resume(api, ns, plan, plan_rev, tmp / spec.id)
            else:
                if wheel is None:
                    wheel = build_wheel(tmp / "wheel")
                plan, plan_rev = _upload_plan(api, plan, wheel, judges_text, version)
                todo = list(range(plan.shards))
                print(
                    f"{spec.id}: dataset {version} at {args.dataset_repo}@{revision[:12]}, "
                    f"{len(ids)} decisions in {shards} shard(s); plan at "
                    f"{args.results_repo}@{plan_rev[:12]}"
                )
            submitted += _run_shards(api, ns, plan, plan_rev, todo, secrets)
    print(f"submitted {submitted} job(s); follow them with --status, then --collect")
    return 0


def _stale_shards(api: Any, repo: str, folder: str) -> list[str]:
    """Shard files already in a run's folder at main (deleted by a new plan's commit)."""
    return [
        f.path
        for f in list_folder(api, repo, folder, recursive=False)
        if re.search(r"/shard-\d+\.jsonl$", f.path)
    ]


# --------------------------------------------------------------------------- entry points


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The ``--on hf-jobs`` options, added to decide.py's parser."""
    g = ap.add_argument_group("Hugging Face Jobs (--on hf-jobs; see docs/hf-jobs.md)")
    g.add_argument("--flavor", help=f"job hardware (default: {DEFAULT_FLAVOR})")
    g.add_argument("--shards", type=int, default=1, help="jobs per judge (default: 1)")
    g.add_argument("--timeout", default="2h", help="per-job limit, e.g. 90m or 2h (default: 2h)")
    g.add_argument("--image", help=f"docker image (default: {DEFAULT_IMAGE})")
    g.add_argument("--results-repo", metavar="REPO", help="dataset repo the predictions go to")
    g.add_argument("--dataset-repo", metavar="REPO", help="dataset repo pushed by build.py")
    g.add_argument("--dataset-revision", metavar="SHA", help="pin (default: its main now)")
    g.add_argument("--status", action="store_true", help="list this benchmark's jobs")
    g.add_argument(
        "--stuck-after", default="30m", help="SCHEDULING longer than this is stuck (default: 30m)"
    )
    g.add_argument(
        "--resubmit-stuck", action="store_true", help="with --status: cancel and rerun stuck jobs"
    )
    g.add_argument("--log-tail", type=int, default=20, help="log lines shown for a failed job")
    g.add_argument("--collect", action="store_true", help="verify and merge finished shards")


def run_remote(specs: list[JudgeSpec], args: argparse.Namespace) -> int:
    """``--on hf-jobs``: status, collect or submit."""
    if args.status or args.resubmit_stuck:
        return status(specs, args)
    if args.collect:
        return collect(specs, args)
    if not args.judge:
        raise ConfigError("--on hf-jobs submits named judges only: pass --judge ID (repeatable)")
    return submit(specs, args)
