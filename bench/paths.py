"""Where things live: the repository, the raw-data root and the git-ignored work folder.

Raw upstream data is never part of the repository. It is read from a folder given on the command
line or named by the ``FORESIGHT_DATA`` environment variable; that folder holds ``r-judge/``,
``stepshield/`` and ``assebench/`` (CI sets it to ``../shared/datasets``).
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.errors import DataError

DATA_ENV = "FORESIGHT_DATA"
"""Environment variable naming the folder that holds the raw sources."""

WORK_ENV = "FORESIGHT_WORK"
"""Environment variable overriding the work folder (default: ``<repo>/work``)."""

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The checkout this package was loaded from (an editable install points here)."""


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The raw-data root: ``explicit`` if given, else ``$FORESIGHT_DATA``, else ``../shared/datasets``
    beside the checkout when it exists. Raises DataError saying how to point at the data."""
    if explicit:
        root = Path(explicit)
    elif os.environ.get(DATA_ENV):
        root = Path(os.environ[DATA_ENV])
    else:
        root = REPO_ROOT.parent / "shared" / "datasets"
    if not root.is_dir():
        raise DataError(
            f"raw-data folder {root} does not exist: pass --path, or set {DATA_ENV} to the folder "
            "that holds r-judge/, stepshield/ and assebench/"
        )
    return root


def work_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The git-ignored work folder for extracted text, renders and scratch runs (not created)."""
    if explicit:
        return Path(explicit)
    if os.environ.get(WORK_ENV):
        return Path(os.environ[WORK_ENV])
    return REPO_ROOT / "work"
