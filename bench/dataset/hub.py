"""Publishing a built version to the Hugging Face Hub, and the licence gate in front of it.

A config whose source forbids redistribution (R-Judge declares no licence: ``license = "none"``)
is never uploaded to a public repository; ``--private`` lifts the gate for a private repository
the user controls (local evaluation across one's own machines). ``huggingface_hub`` is imported
only when a push happens.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import BenchError
from bench.sources.licence import may_redistribute

log = logging.getLogger(__name__)


class PublishError(BenchError):
    """A push was refused or failed."""


@dataclass(frozen=True)
class PushResult:
    """Where a push landed."""

    repo: str
    """The dataset repository id."""
    commit: str
    """The commit sha of the upload: pin it as the revision when loading."""
    url: str
    """The commit URL the Hub returned."""
    private: bool
    """Whether the repository is private."""


def forbidden_configs(licenses: Mapping[str, str]) -> list[str]:
    """Config names whose licence forbids redistribution."""
    return sorted(name for name, lic in licenses.items() if not may_redistribute(lic))


def check_publishable(licenses: Mapping[str, str], private: bool) -> None:
    """Raise PublishError when a config may not be published publicly and ``private`` is off."""
    bad = forbidden_configs(licenses)
    if bad and not private:
        raise PublishError(
            f"config(s) {', '.join(bad)} may not be redistributed (licence: "
            f"{', '.join(licenses[b] or 'none' for b in bad)}): leave them out with --source, or "
            "push to a private repository with --private"
        )


def push(
    folder: Path,
    repo: str,
    *,
    private: bool,
    licenses: Mapping[str, str],
    message: str,
    token: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
    """Create (or reuse) the dataset repository and upload ``folder`` as one commit.

    The licence gate runs first, before any network call. Returns the commit sha so callers can
    pin ``revision=`` when loading."""
    check_publishable(licenses, private)
    from huggingface_hub import HfApi

    # read HF_ENDPOINT now, not at huggingface_hub's import, so a mirror set later still counts
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        # exist_ok reuses a repository as it is: a public one must not receive private data
        if (
            private
            and forbidden_configs(licenses)
            and not getattr(api.dataset_info(repo), "private", False)
        ):
            raise PublishError(
                f"{repo} already exists and is public; it may not receive "
                f"{', '.join(forbidden_configs(licenses))}: make it private on the Hub or "
                "push to a new repository name"
            )
        info = api.upload_folder(
            folder_path=str(folder),
            repo_id=repo,
            repo_type="dataset",
            commit_message=message,
        )
    except PublishError:
        raise
    except Exception as e:  # noqa: BLE001 - any hub failure becomes one actionable message
        raise PublishError(
            f"upload to {repo} failed: {e}; check HF_TOKEN (write access) and the network, then "
            "rerun with --push-to-hub"
        ) from e
    commit = getattr(info, "oid", None) or ""
    url = getattr(info, "commit_url", "") or str(info)
    log.info("pushed %s to %s at commit %s", folder, repo, commit)
    return PushResult(repo=repo, commit=commit, url=url, private=private)
