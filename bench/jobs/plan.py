"""Planning a Hugging Face Jobs run, without I/O: the records and pure rules both sides share.

What a remote run is (``Plan``, stored as ``plan.json`` in the results repository), how decision
ids are split into shards (``sha256(id) mod N``), which configs may leave this machine, what each
job is called, labelled and runs (``job_command``, and the same job as an ``hf jobs run`` line),
and what a shard file must hold to be merged (``shard_header`` writes its first line in the job;
``check_shard`` verifies the file on collect). Submission is in ``bench.jobs``, status in
``bench.jobs.status``, collection in ``bench.jobs.collect`` and the job's side in
``bench.jobs.worker``; see docs/hf-jobs.md.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from bench.core.errors import BenchError, ConfigError
from bench.core.jsonl import content_hash
from bench.judging.protocol import JudgeSpec
from bench.sources.licence import forbidden

BENCHMARK = "foresight-bench"
"""Value of the ``benchmark`` label on every job bench.jobs creates."""

DEFAULT_IMAGE = "pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime"
"""Pinned image: Python 3.11 with CUDA torch, so GPU judges need no torch download."""

DEFAULT_FLAVOR = "a10g-large"
"""Hardware when --flavor is not given."""

SKIP_INSTALL_ENV = "FORESIGHT_JOBS_SKIP_INSTALL"
"""When set (non-empty) in a job, its install step is skipped (emulated jobs in tests)."""

ACTIVE = ("SCHEDULING", "RUNNING")
"""Job stages that are still going."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


class JobsError(BenchError):
    """A remote run cannot be submitted, inspected or collected."""


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Plan:
    """What one judge's remote run over one dataset version is: stored as plan.json."""

    judge: str
    """Judge id."""
    config_hash: str
    """The judge's config hash (template digest included) at submission."""
    dataset_version: str
    """Dataset version named by the dataset's manifest at ``dataset_revision``."""
    dataset_repo: str
    """Dataset repository the jobs read."""
    dataset_revision: str
    """Pinned commit of the dataset repository."""
    results_repo: str
    """Dataset repository the jobs write to."""
    commit: str
    """Git commit of this project the wheel was built from."""
    wheel: str
    """Path of the wheel in the results repository."""
    judges_file: str
    """Path of the judges file in the results repository."""
    backend_extra: str
    """pip extra installed with the wheel ("" for none)."""
    split: str
    """dev / test / all."""
    source: str | None
    """Only this source, or None for every source of the dataset."""
    limit: int | None
    """Only the first N selected points, or None."""
    shards: int
    """Number of shards."""
    shard_ids: tuple[tuple[str, ...], ...]
    """Expected decision ids of each shard (sorted)."""
    image: str
    """Docker image of the jobs."""
    flavor: str
    """Hardware flavor."""
    timeout: str
    """Job timeout as the Jobs API takes it (e.g. ``2h``)."""
    secrets: tuple[str, ...]
    """Names of the secrets the jobs get."""

    @property
    def folder(self) -> str:
        """``predictions/<judge>/<version>`` in the results repository."""
        return f"predictions/{self.judge}/{self.dataset_version}"

    @property
    def path(self) -> str:
        """Where plan.json lives in the results repository."""
        return f"{self.folder}/plan.json"

    def shard_path(self, k: int) -> str:
        """Where shard ``k``'s predictions land."""
        return f"{self.folder}/shard-{k}.jsonl"

    def selection_digest(self) -> str:
        """Hash of the expected ids per shard (what a reused plan must match)."""
        return content_hash([list(s) for s in self.shard_ids])

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        d = asdict(self)
        d["shard_ids"] = [list(s) for s in self.shard_ids]
        d["secrets"] = list(self.secrets)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        """Inverse of ``to_dict``."""
        kw = dict(d)
        kw["shard_ids"] = tuple(tuple(s) for s in kw["shard_ids"])
        kw["secrets"] = tuple(kw.get("secrets", ()))
        return cls(**kw)


ShardState = Literal["ok", "missing", "incomplete", "refused"]


@dataclass(frozen=True)
class ShardCheck:
    """The verdict on one downloaded (or absent) shard."""

    shard: int
    """Shard index."""
    state: ShardState
    """ok: verified and complete; missing: no file; incomplete: ids missing; refused: wrong
    config, dataset version, shard index, duplicate or unexpected ids."""
    problems: tuple[str, ...] = ()
    """What is wrong, one line each."""
    decisions: int = 0
    """Decision lines in the file."""
    errors: int = 0
    """Decisions whose status is error (kept: a local rerun retries them)."""
    missing_ids: tuple[str, ...] = ()
    """Expected ids without a decision."""


# --------------------------------------------------------------------------- sharding, secrets, licences


def shard_of(decision_id: str, shards: int) -> int:
    """The shard a decision id belongs to: sha256 of the id mod ``shards`` (stable across
    machines, Python versions and selections, unlike ``hash``)."""
    if shards < 1:
        raise ConfigError(f"--shards must be at least 1, not {shards}")
    return int.from_bytes(hashlib.sha256(decision_id.encode("utf-8")).digest()[:8], "big") % shards


def partition(ids: Iterable[str], shards: int) -> tuple[tuple[str, ...], ...]:
    """Sorted ids of each shard; every id lands in exactly one."""
    out: list[list[str]] = [[] for _ in range(shards)]
    for i in ids:
        out[shard_of(i, shards)].append(i)
    return tuple(tuple(sorted(s)) for s in out)


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``30m``, ``2h`` or ``1d``; ConfigError otherwise."""
    m = _DURATION.match(str(text))
    if not m:
        raise ConfigError(f"duration {text!r}: write it as 90, 90s, 30m, 2h or 1d")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


def secret_names(spec: JudgeSpec) -> tuple[str, ...]:
    """Names of the secrets a job of this judge needs: HF_TOKEN, plus the API-key variable the row
    names (``params.api_key_env``; the openai backend's default for api.openai.com)."""
    names = ["HF_TOKEN"]
    env = spec.params.get("api_key_env")
    if (
        not env
        and spec.backend == "openai"
        and "api.openai.com" in str(spec.params.get("base_url", "https://api.openai.com/v1"))
    ):
        env = "OPENAI_API_KEY"
    if isinstance(env, str) and env and env not in names:
        names.append(env)
    return tuple(names)


def refused_configs(configs: Mapping[str, Mapping[str, Any]], needed: Iterable[str]) -> list[str]:
    """Of the configs a run needs, those whose licence forbids redistribution (or that the
    manifest does not describe: unknown means no)."""
    unknown = {"redistributable": False}
    return forbidden({name: configs.get(name) or unknown for name in set(needed)})


def refusal_message(judge: str, bad: Sequence[str], configs: Mapping[str, Any]) -> str:
    """The message for a remote run that would ship non-redistributable data."""
    lic = ", ".join(f"{b}: {(configs.get(b) or {}).get('license') or 'none'}" for b in bad)
    src = bad[0]
    return (
        f"judge {judge!r}: config(s) {', '.join(bad)} may not be redistributed (licence {lic}), so "
        f"they are never sent to remote machines. Run them locally: python bench/decide.py "
        f"--judge {judge} --source {src}; or pick a redistributable config with --source"
    )


def run_labels(plan: Plan) -> dict[str, str]:
    """The labels every job of one plan carries (what finding its running jobs filters on)."""
    return {
        "benchmark": BENCHMARK,
        "judge": plan.judge,
        "dataset_version": plan.dataset_version,
        "config_hash": plan.config_hash,
    }


def job_labels(plan: Plan, shard: int) -> dict[str, str]:
    """The labels of shard ``shard``'s job."""
    return {
        **run_labels(plan),
        "shard": str(shard),
        "shards": str(plan.shards),
        "commit": plan.commit[:12],
    }


def job_name(plan: Plan, shard: int) -> str:
    """A readable job name (letters, digits, '-', '_')."""
    return re.sub(r"[^a-zA-Z0-9_-]", "-", f"fb-{plan.judge}-{shard}of{plan.shards}")[:64]


def job_command(plan: Plan, shard: int, plan_revision: str, hub_version: str) -> list[str]:
    """The job's command: install (unless ``$FORESIGHT_JOBS_SKIP_INSTALL``), then the worker.

    The wheel is fetched with huggingface_hub (the token is the HF_TOKEN secret) from the results
    repository at ``plan_revision``, the commit that holds this plan."""
    q = shlex.quote
    extra = f"[{plan.backend_extra}]" if plan.backend_extra else ""
    fetch = (
        "import sys; from huggingface_hub import hf_hub_download as d; "
        "print(d(sys.argv[1], sys.argv[2], repo_type='dataset', revision=sys.argv[3]))"
    )
    worker = [
        "python",
        "-m",
        "bench.jobs",
        "worker",
        "--results-repo",
        plan.results_repo,
        "--plan",
        plan.path,
        "--revision",
        plan_revision,
        "--shard",
        str(shard),
    ]
    script = "\n".join(
        [
            "set -eu",
            f'if [ -z "${{{SKIP_INSTALL_ENV}:-}}" ]; then',
            f"  pip install -q --disable-pip-version-check {q(f'huggingface_hub=={hub_version}')}",
            f"  WHEEL=$(python -c {q(fetch)} {q(plan.results_repo)} {q(plan.wheel)} "
            f"{q(plan_revision)})",
            f'  pip install -q --disable-pip-version-check "$WHEEL{extra}"',
            "fi",
            "exec " + " ".join(q(a) for a in worker),
        ]
    )
    return ["bash", "-c", script]


def hf_cli_argv(
    plan: Plan, shard: int, plan_revision: str, hub_version: str, dry_run: bool = True
) -> list[str]:
    """The same job as an ``hf jobs run`` command line (secrets by name only)."""
    argv = ["hf", "jobs", "run"]
    if dry_run:
        argv.append("--dry-run")
    argv += ["--flavor", plan.flavor, "--timeout", plan.timeout, "--name", job_name(plan, shard)]
    for k, v in job_labels(plan, shard).items():
        argv += ["--label", f"{k}={v}"]
    for s in plan.secrets:
        argv += ["--secrets", s]
    return [*argv, plan.image, *job_command(plan, shard, plan_revision, hub_version)]


# --------------------------------------------------------------------------- shard files


def shard_header(plan: Plan, shard: int, plan_revision: str, expected: int) -> dict[str, Any]:
    """The first line of a shard file, written by the job: what ``check_shard`` checks first."""
    return {
        "type": "shard",
        "judge": plan.judge,
        "shard": shard,
        "shards": plan.shards,
        "config_hash": plan.config_hash,
        "dataset_version": plan.dataset_version,
        "dataset_revision": plan.dataset_revision,
        "plan_revision": plan_revision,
        "commit": plan.commit,
        "expected": expected,
    }


def check_shard(lines: Sequence[Mapping[str, Any]] | None, plan: Plan, shard: int) -> ShardCheck:
    """Verify one shard file's lines against the plan (None: the file is absent)."""
    if lines is None:
        return ShardCheck(shard, "missing", ("no file in the results repository",))
    problems: list[str] = []
    header = lines[0] if lines and lines[0].get("type") == "shard" else None
    if header is None:
        problems.append("no shard header line: not written by bench.jobs")
    else:
        if header.get("shard") != shard or header.get("shards") != plan.shards:
            problems.append(
                f"header says shard {header.get('shard')} of {header.get('shards')}, "
                f"expected {shard} of {plan.shards}"
            )
        if header.get("dataset_version") != plan.dataset_version:
            problems.append(
                f"dataset version {header.get('dataset_version')!r}, expected "
                f"{plan.dataset_version!r}"
            )
        if header.get("config_hash") != plan.config_hash:
            problems.append(
                f"config hash {header.get('config_hash')!r}, expected {plan.config_hash!r}"
            )
    runs = [r for r in lines if r.get("type") == "run"]
    if not runs:
        problems.append("no run line")
    for r in runs:
        if r.get("dataset_version") != plan.dataset_version:
            problems.append(
                f"run line for dataset version {r.get('dataset_version')!r}, expected "
                f"{plan.dataset_version!r}"
            )
        if r.get("config_hash") != plan.config_hash:
            problems.append(
                f"run line with config hash {r.get('config_hash')!r}, expected {plan.config_hash!r}"
            )
        if r.get("judge") != plan.judge:
            problems.append(f"run line for judge {r.get('judge')!r}, expected {plan.judge!r}")
    decisions = [r for r in lines if r.get("type") == "decision"]
    counts = Counter(str(r.get("id")) for r in decisions)
    dups = sorted(i for i, n in counts.items() if n > 1)
    if dups:
        problems.append(f"{len(dups)} duplicate decision id(s), e.g. {dups[0]}")
    expected = set(plan.shard_ids[shard])
    unexpected = sorted(set(counts) - expected)
    if unexpected:
        problems.append(f"{len(unexpected)} id(s) not in this shard's plan, e.g. {unexpected[0]}")
    missing = tuple(sorted(expected - set(counts)))
    errors = sum(1 for r in decisions if r.get("status") == "error")
    if problems:
        return ShardCheck(shard, "refused", tuple(problems), len(decisions), errors, missing)
    if missing:
        return ShardCheck(
            shard,
            "incomplete",
            (f"{len(missing)} of {len(expected)} expected ids have no decision",),
            len(decisions),
            errors,
            missing,
        )
    return ShardCheck(shard, "ok", (), len(decisions), errors)


def shard_lines_for_merge(
    lines: Sequence[Mapping[str, Any]], plan: Plan, shard: int, blob: str
) -> list[dict[str, Any]]:
    """A verified shard as one run session of the local predictions file: its run line(s) marked
    with where they came from, then its decisions and run_end lines."""
    out: list[dict[str, Any]] = []
    for r in lines:
        kind = r.get("type")
        if kind == "shard":
            continue
        row = dict(r)
        if kind == "run":
            row["remote"] = {
                "on": "hf-jobs",
                "results_repo": plan.results_repo,
                "shard": shard,
                "shards": plan.shards,
                "blob": blob,
                "commit": plan.commit,
                "dataset_revision": plan.dataset_revision,
            }
        out.append(row)
    return out
