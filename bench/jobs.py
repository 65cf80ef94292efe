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
(``bench.decide.run_judge``) on that shard, and uploads ``predictions/<judge>/<version>/
shard-K.jsonl``. Setting ``FORESIGHT_JOBS_SKIP_INSTALL=1`` skips the install step: the tests'
emulated jobs use the package already installed here.

**Status** lists this benchmark's jobs (by label) with stage, durations and shard; the latest job
of a shard in SCHEDULING longer than ``--stuck-after`` is reported stuck and ``--resubmit-stuck``
cancels and reruns it; a failed job shows the tail of its logs.

**Collect** downloads the shards, checks each one's config hash, dataset version and ids (the
planned ones, each once), appends the verified shards to ``leaderboards/predictions/<judge>/
<version>/<config_hash>.jsonl`` (one run session per shard), and names the shards that are
missing, incomplete or refused. Submitting again with the same plan runs only those.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/jobs.py`: the repo root, not bench/, first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterable, Mapping, Sequence  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any, Literal  # noqa: E402

from bench._script import run  # noqa: E402
from bench.errors import BenchError, ConfigError, DataError, IntegrityError  # noqa: E402
from bench.jsonl import content_hash  # noqa: E402
from bench.paths import REPO_ROOT  # noqa: E402

if TYPE_CHECKING:
    from bench.judges import JudgeSpec

log = logging.getLogger(__name__)

BENCHMARK = "foresight-bench"
"""Value of the ``benchmark`` label on every job this module creates."""

DEFAULT_IMAGE = "pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime"
"""Pinned image: Python 3.11 with CUDA torch, so GPU judges need no torch download."""

DEFAULT_FLAVOR = "a10g-large"
"""Hardware when --flavor is not given."""

SKIP_INSTALL_ENV = "FORESIGHT_JOBS_SKIP_INSTALL"
"""When set (non-empty) in a job, its install step is skipped (emulated jobs in tests)."""

BACKEND_EXTRAS: Mapping[str, str] = {"transformers": "hf", "embedding": "embed"}
"""pip extra a backend needs inside the job."""

NOT_REDISTRIBUTABLE = frozenset({"none", "", "unknown", "proprietary"})
"""Licence ids that forbid redistribution (as in bench.hub)."""

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


# --------------------------------------------------------------------------- pure helpers


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
    bad = []
    for name in sorted(set(needed)):
        c = configs.get(name)
        if c is None:
            bad.append(name)
            continue
        lic = str(c.get("license", "")).strip().lower()
        if c.get("redistributable") is False or lic in NOT_REDISTRIBUTABLE:
            bad.append(name)
    return bad


def refusal_message(judge: str, bad: Sequence[str], configs: Mapping[str, Any]) -> str:
    """The message for a remote run that would ship non-redistributable data."""
    lic = ", ".join(f"{b}: {(configs.get(b) or {}).get('license') or 'none'}" for b in bad)
    src = bad[0]
    return (
        f"judge {judge!r}: config(s) {', '.join(bad)} may not be redistributed (licence {lic}), so "
        f"they are never sent to remote machines. Run them locally: python bench/decide.py "
        f"--judge {judge} --source {src}; or pick a redistributable config with --source"
    )


def job_labels(plan: Plan, shard: int) -> dict[str, str]:
    """The labels of shard ``shard``'s job."""
    return {
        "benchmark": BENCHMARK,
        "judge": plan.judge,
        "dataset_version": plan.dataset_version,
        "config_hash": plan.config_hash,
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


def merged_blobs(path: str | os.PathLike[str]) -> set[str]:
    """Blob ids of remote shards already appended to a local predictions file."""
    from bench import predictions

    return {
        str(r["remote"]["blob"])
        for r in predictions.read_lines(path)
        if r.get("type") == "run" and isinstance(r.get("remote"), dict) and r["remote"].get("blob")
    }


# --------------------------------------------------------------------------- hub plumbing


def _endpoint() -> str | None:
    """``$HF_ENDPOINT`` read now (huggingface_hub reads it once, at import)."""
    return os.environ.get("HF_ENDPOINT") or None


def _token() -> str:
    from huggingface_hub import get_token

    token = os.environ.get("HF_TOKEN") or get_token()
    if not token:
        raise JobsError("no Hugging Face token: set HF_TOKEN (or run `hf auth login`)")
    return token


def _api() -> Any:
    from huggingface_hub import HfApi

    return HfApi(endpoint=_endpoint(), token=_token())


def _download(repo: str, path: str, revision: str, into: Path) -> Path | None:
    """One file of a dataset repo at a revision into ``into`` (None when it does not exist)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError

    try:
        got = hf_hub_download(
            repo,
            path,
            repo_type="dataset",
            revision=revision,
            local_dir=str(into),
            endpoint=_endpoint(),
            token=_token(),
        )
    except (EntryNotFoundError, RemoteEntryNotFoundError):
        return None
    return Path(got)


def _read_lines(path: Path) -> list[dict[str, Any]]:
    from bench.jsonl import read_jsonl

    return list(read_jsonl(path))


def _namespace(api: Any) -> str:
    return str(api.whoami()["name"])


# --------------------------------------------------------------------------- the dataset


@dataclass
class _Fetched:
    """A dataset version downloaded from the Hub into a temporary build folder."""

    build_dir: Path
    """Folder laid out as bench.dataset expects (``<version>/decision_points.jsonl``)."""
    version: str
    """Version named by the manifest."""
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per config: license, redistributable."""


def fetch_manifest(repo: str, revision: str, into: Path) -> dict[str, Any]:
    """The dataset's manifest.json at a revision."""
    p = _download(repo, "manifest.json", revision, into)
    if p is None:
        raise DataError(
            f"{repo}@{revision[:12]} has no manifest.json: push the dataset with "
            "`python bench/build.py --push-to-hub REPO`"
        )
    m: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    if not m.get("version"):
        raise DataError(f"{repo}@{revision[:12]}: manifest.json names no version; rebuild and push")
    return m


def fetch_points(repo: str, revision: str, manifest: Mapping[str, Any], into: Path) -> _Fetched:
    """Download decision_points.jsonl next to the manifest, laid out as a build folder."""
    from bench.dataset import LATEST_FILE, POINTS_FILE

    version = str(manifest["version"])
    folder = into / "build" / version
    p = _download(repo, POINTS_FILE, revision, into / "dl")
    if p is None:
        raise DataError(f"{repo}@{revision[:12]} has no {POINTS_FILE}: rebuild and push it")
    want = (manifest.get("files") or {}).get(POINTS_FILE)
    if want:
        from bench.jsonl import sha256_file

        got = sha256_file(p)
        if got != want:
            raise IntegrityError(
                f"{repo}@{revision[:12]}: {POINTS_FILE} sha256 {got[:12]} does not match the "
                f"manifest's {want[:12]}; push the dataset again"
            )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / POINTS_FILE).write_bytes(p.read_bytes())
    (into / "build" / LATEST_FILE).write_text(version + "\n", encoding="utf-8")
    return _Fetched(into / "build", version, dict(manifest.get("configs") or {}))


def _selection(fetched: _Fetched, split: str, source: str | None, limit: int | None) -> Any:
    from bench import decide

    ns = argparse.Namespace(
        version=fetched.version,
        build_dir=str(fetched.build_dir),
        split=split,
        source=source,
        limit=limit,
    )
    return decide.select_points(ns)


def _config_hash(spec: JudgeSpec) -> str:
    from bench import decide

    return spec.config_hash(decide.template_digest(spec.prompt))


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
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "--disable-pip-version-check",
                "-w",
                str(out_dir),
                str(src),
            ],
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
    labels = {
        "benchmark": BENCHMARK,
        "judge": plan.judge,
        "dataset_version": plan.dataset_version,
        "config_hash": plan.config_hash,
    }
    views = [job_view(j) for j in api.list_jobs(labels=labels, namespace=ns)]
    return {j.shard for j in latest_per_shard(views).values() if j.stage in ACTIVE}


def _secrets(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for n in names:
        v = _token() if n == "HF_TOKEN" else os.environ.get(n)
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
    p = _download(results_repo, path, sha, tmp / "plan")
    if p is None:
        return None
    return Plan.from_dict(json.loads(p.read_text(encoding="utf-8"))), sha


def submit(
    specs: Sequence[JudgeSpec], args: argparse.Namespace, *, wheel: Path | None = None
) -> int:
    """Submit one job per shard of each judge (only the shards not done or running when an
    identical plan is already in the results repository)."""
    import huggingface_hub
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    if not args.results_repo or not args.dataset_repo:
        raise ConfigError(
            "--on hf-jobs needs --results-repo ORG/NAME (where predictions land) and "
            "--dataset-repo ORG/NAME (the pushed dataset)"
        )
    shards = int(args.shards or 1)
    if shards < 1:
        raise ConfigError(f"--shards must be at least 1, not {shards}")
    parse_duration(args.timeout)
    api = _api()
    ns = _namespace(api)
    revision = args.dataset_revision or api.dataset_info(args.dataset_repo).sha
    commit = _git("rev-parse", "HEAD").strip()
    if _git("status", "--porcelain", "--untracked-files=no").strip():
        log.warning("uncommitted changes are not in the job: it runs commit %s", commit[:12])
    judges_path = Path(args.judges or REPO_ROOT / "judges.toml")
    judges_text = judges_path.read_bytes()
    submitted = 0
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
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
        sel = _selection(fetched, args.split, args.source, args.limit)
        present = {p.source for p in sel.points}
        bad = refused_configs(configs, present)
        if bad:  # the manifest and the points disagree: refuse all the same
            raise JobsError(refusal_message(specs[0].id if specs else "?", bad, configs))
        ids = [p.id for p in sel.points]
        if not ids:
            raise DataError("no decision points selected: check --split, --source and --limit")
        for spec in specs:
            plan = Plan(
                judge=spec.id,
                config_hash=_config_hash(spec),
                dataset_version=version,
                dataset_repo=args.dataset_repo,
                dataset_revision=revision,
                results_repo=args.results_repo,
                commit=commit,
                wheel="",
                judges_file=f"jobs/{commit[:12]}/judges-{content_hash(judges_text.decode())}.toml",
                backend_extra=BACKEND_EXTRAS.get(spec.backend, ""),
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
                done = {
                    c.shard
                    for c in _check_all(api, plan, plan_rev, tmp / spec.id / "shards")[0]
                    if c.state == "ok"
                }
                busy = _active_shards(api, ns, plan)
                todo = [k for k in range(plan.shards) if k not in done | busy]
                print(
                    f"{spec.id}: plan {plan.path} unchanged; {len(done)} shard(s) done, "
                    f"{len(busy)} running or scheduled, submitting {len(todo)}: {todo}"
                )
            else:
                if wheel is None:
                    wheel = build_wheel(tmp / "wheel")
                plan = Plan(**{**asdict(plan), "wheel": f"jobs/{commit[:12]}/{wheel.name}"})
                ops: list[Any] = [
                    CommitOperationAdd(plan.wheel, str(wheel)),
                    CommitOperationAdd(plan.judges_file, judges_text),
                    CommitOperationAdd(
                        plan.path, (json.dumps(plan.to_dict(), indent=1) + "\n").encode()
                    ),
                ]
                stale = _stale_shards(api, args.results_repo, plan.folder)
                ops += [CommitOperationDelete(p) for p in stale]
                info = api.create_commit(
                    args.results_repo,
                    ops,
                    commit_message=f"plan {plan.judge} on {version} ({shards} shards)",
                    repo_type="dataset",
                )
                plan_rev = info.oid
                todo = list(range(plan.shards))
                print(
                    f"{spec.id}: dataset {version} at {args.dataset_repo}@{revision[:12]}, "
                    f"{len(ids)} decisions in {shards} shard(s); plan at "
                    f"{args.results_repo}@{plan_rev[:12]}"
                )
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
                submitted += 1
                print(f"  shard {k}: job {job.id} {job.url}")
    print(f"submitted {submitted} job(s); follow them with --status, then --collect")
    return 0


def _stale_shards(api: Any, repo: str, folder: str) -> list[str]:
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError

    try:
        return [
            f.path
            for f in api.list_repo_tree(repo, path_in_repo=folder, repo_type="dataset")
            if re.search(r"/shard-\d+\.jsonl$", f.path)
        ]
    except (EntryNotFoundError, RemoteEntryNotFoundError):
        return []


# --------------------------------------------------------------------------- status


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    x = int(x)
    return f"{x // 3600}h{x % 3600 // 60:02d}m" if x >= 3600 else f"{x // 60}m{x % 60:02d}s"


def status(specs: Sequence[JudgeSpec] | None, args: argparse.Namespace) -> int:
    """List this benchmark's jobs; report stuck and failed ones (and --resubmit-stuck)."""
    api = _api()
    ns = _namespace(api)
    limit_s = parse_duration(args.stuck_after)
    wanted = {s.id for s in specs} if specs and args.judge else None
    views = [
        job_view(j)
        for j in api.list_jobs(labels={"benchmark": BENCHMARK}, namespace=ns)
        if wanted is None or (j.labels or {}).get("judge") in wanted
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


# --------------------------------------------------------------------------- collect


def _check_all(
    api: Any, plan: Plan, revision: str, into: Path
) -> tuple[list[ShardCheck], dict[int, tuple[list[dict[str, Any]], str]]]:
    """Download and check every shard of a plan at a results revision."""
    blobs: dict[str, str] = {}
    for f in _listing(api, plan.results_repo, plan.folder, revision):
        blobs[f.path] = getattr(f, "blob_id", "") or ""
    checks: list[ShardCheck] = []
    good: dict[int, tuple[list[dict[str, Any]], str]] = {}
    for k in range(plan.shards):
        path = plan.shard_path(k)
        lines = None
        if path in blobs:
            p = _download(plan.results_repo, path, revision, into)
            lines = _read_lines(p) if p is not None else None
        c = check_shard(lines, plan, k)
        checks.append(c)
        if c.state == "ok" and lines is not None:
            good[k] = (lines, blobs[path])
    return checks, good


def _listing(api: Any, repo: str, folder: str, revision: str) -> list[Any]:
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError

    try:
        return list(
            api.list_repo_tree(
                repo, path_in_repo=folder, revision=revision, recursive=True, repo_type="dataset"
            )
        )
    except (EntryNotFoundError, RemoteEntryNotFoundError):
        return []


def collect_one(
    api: Any, spec: JudgeSpec, args: argparse.Namespace, tmp: Path
) -> list[CollectResult]:
    """Collect every plan of one judge in the results repo (or only --version's)."""
    from bench import predictions

    revision = api.dataset_info(args.results_repo).sha
    chash = _config_hash(spec)
    plans = [
        f.path
        for f in _listing(api, args.results_repo, f"predictions/{spec.id}", revision)
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
        p = _download(args.results_repo, pp, revision, tmp / "plans")
        assert p is not None
        plan = Plan.from_dict(json.loads(p.read_text(encoding="utf-8")))
        if plan.config_hash != chash:
            print(
                f"{spec.id} {plan.dataset_version}: the remote run is of config {plan.config_hash}, "
                f"judges.toml now gives {chash}: not collected (submit again to run this config)"
            )
            continue
        checks, good = _check_all(api, plan, revision, tmp / "shards" / plan.dataset_version)
        path = predictions.path_for(args.out, spec.id, plan.dataset_version, plan.config_hash)
        have = merged_blobs(path)
        merged, already = [], []
        with predictions.Writer(path) if good else _Null() as w:
            for k, (lines, blob) in sorted(good.items()):
                if blob and blob in have:
                    already.append(k)
                    continue
                for row in shard_lines_for_merge(lines, plan, k, blob):
                    w.write(row)
                merged.append(k)
        results.append(CollectResult(plan, tuple(checks), tuple(merged), tuple(already), str(path)))
    return results


class _Null:
    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write(self, row: Mapping[str, Any]) -> None:
        raise AssertionError("nothing to write")


def collect(specs: Sequence[JudgeSpec], args: argparse.Namespace) -> int:
    """Download, verify and merge the shards of each judge; exit 1 when any shard is not done."""
    if not args.results_repo:
        raise ConfigError("--collect needs --results-repo ORG/NAME")
    api = _api()
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


# --------------------------------------------------------------------------- decide.py hook


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


# --------------------------------------------------------------------------- the job's side


def worker(args: argparse.Namespace) -> int:
    """Inside the job: run one shard of a plan with the local runner and upload its file."""
    from bench import decide, judges, predictions

    api = _api()
    tmp = Path(tempfile.mkdtemp(prefix="foresight-job-"))
    p = _download(args.results_repo, args.plan, args.revision, tmp / "plan")
    if p is None:
        raise JobsError(f"{args.results_repo}@{args.revision[:12]} has no {args.plan}")
    plan = Plan.from_dict(json.loads(p.read_text(encoding="utf-8")))
    k = int(args.shard)
    if not 0 <= k < plan.shards:
        raise JobsError(f"shard {k} is outside the plan's {plan.shards} shards")
    jf = _download(args.results_repo, plan.judges_file, args.revision, tmp / "judges")
    if jf is None:
        raise JobsError(f"{plan.judges_file} is missing from {args.results_repo}")
    spec = judges.select(judges.load(jf), [plan.judge])[0]
    chash = _config_hash(spec)
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
    sel = _selection(fetched, plan.split, plan.source, plan.limit)
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
    run_args = argparse.Namespace(
        out=str(tmp / "out"),
        force=True,
        quiet=True,
        split=plan.split,
        source=plan.source,
        limit=plan.limit,
    )
    outcome = decide.run_judge(spec, decide.Selection(fetched.version, mine, sel.dev), run_args)
    print(decide.summary([outcome]))
    if outcome.state in ("skipped", "failed", "aborted"):
        raise JobsError(f"judge {plan.judge} {outcome.state}: {outcome.reason}")
    header = {
        "type": "shard",
        "judge": plan.judge,
        "shard": k,
        "shards": plan.shards,
        "config_hash": plan.config_hash,
        "dataset_version": fetched.version,
        "dataset_revision": plan.dataset_revision,
        "plan_revision": args.revision,
        "commit": plan.commit,
        "expected": len(mine),
    }
    lines = [header, *predictions.read_lines(outcome.path)]
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


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.jobs worker ...`` (what a job runs); everything else is under
    ``python bench/decide.py --on hf-jobs``."""
    from bench._script import setup_logging

    ap = argparse.ArgumentParser(prog="bench.jobs", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker", help="run one shard of a plan (inside a job)")
    w.add_argument("--results-repo", required=True)
    w.add_argument("--plan", required=True, help="path of plan.json in the results repo")
    w.add_argument("--revision", required=True, help="results repo commit holding the plan")
    w.add_argument("--shard", type=int, required=True)
    args = ap.parse_args(argv)
    setup_logging(quiet=False)
    return worker(args)


if __name__ == "__main__":
    raise SystemExit(run(main))
