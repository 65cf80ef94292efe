"""Every path the project reads or writes by default, named once.

Three roots: the checkout (``REPO_ROOT``: committed inputs and outputs), the raw-data root
(``data_root()``: upstream data, never part of the repository; ``FORESIGHT_DATA`` or
``../shared/datasets``) and the git-ignored work folder (``work_dir()``: extracted upstream text,
renders, scratch runs; ``FORESIGHT_WORK`` or ``<repo>/work``). Package resources (templates,
pins) sit beside the code that uses them and are named here too, so no module builds a default
path of its own; every command takes an option to point elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.core.errors import DataError

DATA_ENV = "FORESIGHT_DATA"
"""Environment variable naming the folder that holds the raw sources."""

WORK_ENV = "FORESIGHT_WORK"
"""Environment variable overriding the work folder (default: ``<repo>/work``)."""

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``bench`` package folder (templates and pins ship inside it)."""

REPO_ROOT = PACKAGE.parent
"""The checkout this package was loaded from (an editable install points here)."""

# ------------------------------------------------------------------ committed inputs (data/)

DATA_DIR = REPO_ROOT / "data"
"""The project's own data: taxonomy, guidelines, sample corpus, labels, reviews."""

TAXONOMY = DATA_DIR / "taxonomy.toml"
"""The label vocabulary and the per-source mapping tables."""

SAMPLE_DIR = DATA_DIR / "sample"
"""The embedded sample corpus written by the project."""

LABELS_DIR = DATA_DIR / "labels"
"""Committed label proposals, one ``<source>.jsonl`` per source."""

REVIEWS_DIR = DATA_DIR / "reviews"
"""Committed reviews, one ``<reviewer>.jsonl`` per reviewer."""

BUILD_DIR = DATA_DIR / "build"
"""Built dataset versions (git-ignored: they hold upstream text)."""

JUDGES_TOML = REPO_ROOT / "judges.toml"
"""The judges file: one ``[[judge]]`` row per judge."""

# ------------------------------------------------------------ committed outputs (leaderboards/)

LEADERBOARDS = REPO_ROOT / "leaderboards"
"""Ground truth, predictions and the generated tables."""

GROUND_TRUTH = LEADERBOARDS / "ground_truth.jsonl"
"""The committed ground truth (ids and labels only; its ``.meta.json`` sits beside it)."""

PREDICTIONS = LEADERBOARDS / "predictions"
"""``<judge>/<dataset_version>/<config_hash>.jsonl`` files."""

COST_MATRIX = LEADERBOARDS / "cost_matrix.toml"
"""The published reward matrix."""

# ------------------------------------------------------------------------ package resources

PINS_DIR = PACKAGE / "sources" / "pins"
"""Each adapter's pinned upstream (commit, file paths, sha256)."""

PROMPT_TEMPLATES = PACKAGE / "prompts" / "templates"
"""The judges' prompt templates (``<name>.j2``)."""

CARD_TEMPLATE = PACKAGE / "dataset" / "templates" / "card.md.j2"
"""The dataset card template."""

REPORT_TEMPLATES = PACKAGE / "report" / "templates"
"""The leaderboard's HTML template."""


# ------------------------------------------------------------------------------ the roots


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


def prediction_cache(work: str | os.PathLike[str] | None = None) -> Path:
    """``<work>/cache/predictions``: each predictions file reduced to the columns the
    leaderboard scores, by content hash (``bench.report.columns``; safe to delete)."""
    return work_dir(work) / "cache" / "predictions"


def report_cache(work: str | os.PathLike[str] | None = None) -> Path:
    """``<work>/cache/report``: each judge's breakdown cells, by a hash of its statistics, the
    board's groups and draws, the settings and the scoring code (``bench.report.cache``; safe
    to delete)."""
    return work_dir(work) / "cache" / "report"


def extracted(work: str | os.PathLike[str], source: str) -> Path:
    """``<work>/extract/<source>/trajectories.jsonl``: what extraction wrote for a source."""
    return Path(work) / "extract" / source / "trajectories.jsonl"
