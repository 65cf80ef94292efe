"""Shared fixtures. Tests are offline and write only under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.core.paths import REPO_ROOT, data_root

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


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
