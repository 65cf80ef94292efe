"""The Hub calls both sides of a Hugging Face Jobs run share: client, downloads, listings, plans
and the pinned dataset.

The submitter (``bench.jobs.submit``) and the job (``bench.jobs.worker``) both read files of
dataset repositories at pinned revisions, load ``plan.json``, and fetch the dataset's manifest
and decision points into a build folder that ``bench.judging.local`` reads like a local build.
``huggingface_hub`` is imported inside each function, never at module level.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core.errors import DataError, IntegrityError
from bench.core.jsonl import sha256_file
from bench.dataset.reader import LATEST_FILE, POINTS_FILE
from bench.jobs.plan import JobsError, Plan
from bench.judging.local import Selection, select_points
from bench.judging.protocol import JudgeSpec
from bench.prompts.renderer import template_digest

# --------------------------------------------------------------------------- client and files


def endpoint() -> str | None:
    """``$HF_ENDPOINT`` read now (huggingface_hub reads it once, at import)."""
    return os.environ.get("HF_ENDPOINT") or None


def token() -> str:
    """The Hugging Face token: ``$HF_TOKEN``, else the one ``hf auth login`` stored."""
    from huggingface_hub import get_token

    found = os.environ.get("HF_TOKEN") or get_token()
    if not found:
        raise JobsError("no Hugging Face token: set HF_TOKEN (or run `hf auth login`)")
    return found


def api() -> Any:
    """An ``HfApi`` for the current endpoint and token."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint(), token=token())


def namespace(client: Any) -> str:
    """The account the jobs run under (the token's user)."""
    return str(client.whoami()["name"])


def download(repo: str, path: str, revision: str, into: Path) -> Path | None:
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
            endpoint=endpoint(),
            token=token(),
        )
    except (EntryNotFoundError, RemoteEntryNotFoundError):
        return None
    return Path(got)


def list_folder(
    client: Any, repo: str, folder: str, revision: str | None = None, *, recursive: bool = True
) -> list[Any]:
    """The entries under ``folder`` of a dataset repo (at ``revision``, else main); [] when the
    folder does not exist."""
    from huggingface_hub.errors import EntryNotFoundError, RemoteEntryNotFoundError

    try:
        return list(
            client.list_repo_tree(
                repo,
                path_in_repo=folder,
                revision=revision,
                recursive=recursive,
                repo_type="dataset",
            )
        )
    except (EntryNotFoundError, RemoteEntryNotFoundError):
        return []


def fetch_plan(repo: str, path: str, revision: str, into: Path) -> Plan | None:
    """The plan.json at ``path`` of the results repo at a revision (None when absent)."""
    p = download(repo, path, revision, into)
    if p is None:
        return None
    return Plan.from_dict(json.loads(p.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- the dataset


@dataclass(frozen=True)
class Fetched:
    """A dataset version downloaded from the Hub into a temporary build folder."""

    build_dir: Path
    """Folder laid out as bench.dataset expects (``<version>/decision_points.jsonl``)."""
    version: str
    """Version named by the manifest."""
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per config: license, redistributable."""


def fetch_manifest(repo: str, revision: str, into: Path) -> dict[str, Any]:
    """The dataset's manifest.json at a revision."""
    p = download(repo, "manifest.json", revision, into)
    if p is None:
        raise DataError(
            f"{repo}@{revision[:12]} has no manifest.json: push the dataset with "
            "`python bench/build.py --push-to-hub REPO`"
        )
    m: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    if not m.get("version"):
        raise DataError(f"{repo}@{revision[:12]}: manifest.json names no version; rebuild and push")
    return m


def fetch_points(repo: str, revision: str, manifest: Mapping[str, Any], into: Path) -> Fetched:
    """Download decision_points.jsonl next to the manifest, laid out as a build folder."""
    version = str(manifest["version"])
    folder = into / "build" / version
    p = download(repo, POINTS_FILE, revision, into / "dl")
    if p is None:
        raise DataError(f"{repo}@{revision[:12]} has no {POINTS_FILE}: rebuild and push it")
    want = (manifest.get("files") or {}).get(POINTS_FILE)
    if want:
        got = sha256_file(p)
        if got != want:
            raise IntegrityError(
                f"{repo}@{revision[:12]}: {POINTS_FILE} sha256 {got[:12]} does not match the "
                f"manifest's {want[:12]}; push the dataset again"
            )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / POINTS_FILE).write_bytes(p.read_bytes())
    (into / "build" / LATEST_FILE).write_text(version + "\n", encoding="utf-8")
    return Fetched(into / "build", version, dict(manifest.get("configs") or {}))


def select(fetched: Fetched, split: str, source: str | None, limit: int | None) -> Selection:
    """The points of a fetched dataset a run evaluates: the same selection as a local run."""
    return select_points(
        version=fetched.version,
        build_dir=fetched.build_dir,
        split=split,
        source=source,
        limit=limit,
    )


def config_hash(spec: JudgeSpec) -> str:
    """The judge's config hash with its template's digest, as a local run computes it."""
    return spec.config_hash(template_digest(spec.prompt))
