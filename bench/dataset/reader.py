"""Read a built dataset: the runner's input.

``python bench/build.py`` writes ``data/build/<version>/decision_points.jsonl`` (one
``DecisionPoint.to_dict()`` per line, gold filled, plus ``split`` and ``disputed``) and names the
newest version in ``data/build/LATEST``. ``load`` reads it back as typed records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import DataError
from bench.core.jsonl import read_jsonl
from bench.core.paths import BUILD_DIR
from bench.core.schema import DecisionPoint, Split

POINTS_FILE = "decision_points.jsonl"
"""The runner's input inside a version folder."""

LATEST_FILE = "LATEST"
"""File in the build folder naming the newest version."""


@dataclass(frozen=True)
class LoadedDataset:
    """One built dataset version, read back."""

    version: str
    """The dataset version (content hash of trajectories, labels and splits)."""
    points: list[DecisionPoint]
    """Decision points with gold labels, in the build's stable order (after filters)."""
    split: dict[str, Split] = field(default_factory=dict)
    """Decision point id -> dev / test."""
    disputed: set[str] = field(default_factory=set)
    """Ids of decision points whose trajectory's upstream label a reviewer disputed."""
    lite: set[str] = field(default_factory=set)
    """Ids of the decision points in the lite split (``bench.dataset.lite``)."""


def latest_version(build_dir: str | os.PathLike[str] = BUILD_DIR) -> str:
    """The version named in ``<build_dir>/LATEST``; DataError saying how to build when absent."""
    latest = Path(build_dir) / LATEST_FILE
    if not latest.is_file():
        raise DataError(
            f"no built dataset in {build_dir} (no {LATEST_FILE} file): run `python bench/build.py` "
            "first (it builds the embedded sample offline)"
        )
    version = latest.read_text(encoding="utf-8").strip()
    if not version:
        raise DataError(f"{latest} is empty: run `python bench/build.py` again")
    return version


def load(
    version: str | None = None,
    *,
    source: str | None = None,
    split: str | None = None,
    build_dir: str | os.PathLike[str] = BUILD_DIR,
) -> LoadedDataset:
    """Read a built version (the newest when ``version`` is None), optionally one source and/or
    one split. Raises DataError telling the user to run ``python bench/build.py`` when nothing is
    built, or which versions exist when ``version`` is unknown."""
    root = Path(build_dir)
    if version is None:
        version = latest_version(root)
    path = root / version / POINTS_FILE
    if not path.is_file():
        have = sorted(p.name for p in root.glob("*") if (p / POINTS_FILE).is_file())
        hint = f" (built versions: {', '.join(have)})" if have else ""
        raise DataError(
            f"dataset version {version!r} is not built under {root}{hint}: run "
            "`python bench/build.py` with the same inputs to rebuild it"
        )
    if split is not None and split not in ("dev", "test"):
        raise DataError(f"unknown split {split!r}: use dev or test")
    points: list[DecisionPoint] = []
    splits: dict[str, Split] = {}
    disputed: set[str] = set()
    lite: set[str] = set()
    for d in read_jsonl(path):
        if source is not None and d["source"] != source:
            continue
        if split is not None and d["split"] != split:
            continue
        dp = DecisionPoint.from_dict(d)
        points.append(dp)
        splits[dp.id] = d["split"]
        if d.get("disputed"):
            disputed.add(dp.id)
        if d.get("lite"):
            lite.add(dp.id)
    if source is not None and not points:
        known = sorted({d["source"] for d in read_jsonl(path)})
        if source not in known:
            raise DataError(
                f"source {source!r} is not in dataset {version} (it holds {', '.join(known)}): "
                f"build it with `python bench/build.py --source {source}`"
            )
    return LoadedDataset(version=version, points=points, split=splits, disputed=disputed, lite=lite)
