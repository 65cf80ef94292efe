"""Shared fixtures. Tests are offline and write only under tmp_path."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.core.paths import REPO_ROOT, WORK_ENV, data_root

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# Every cache the commands keep under the work folder (bench.core.paths: prediction_cache,
# report_cache) goes to a temporary folder for the whole session, never the repository's work/.
# No test reads built data from work/ (the build writes data/build/; tests pass --work tmp).
_WORK = tempfile.mkdtemp(prefix="foresight-work-")
os.environ[WORK_ENV] = _WORK


@pytest.fixture(scope="session", autouse=True)
def _session_work() -> Iterator[Path]:
    """The session's work folder (``FORESIGHT_WORK``), removed at the end."""
    yield Path(_WORK)
    shutil.rmtree(_WORK, ignore_errors=True)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout under test."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def raw_root() -> Path:
    """The raw-data root ($FORESIGHT_DATA or ../shared/datasets); skips when absent."""
    try:
        return data_root()
    except Exception as e:  # noqa: BLE001 - any failure means the data is not here
        pytest.skip(f"raw data not available: {e}")
