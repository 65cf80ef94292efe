"""The version folder ``data/build/<version>/``, written atomically.

``write_version`` writes into a temporary folder and renames it into place, then points ``LATEST``
at it: a parquet ``DatasetDict`` per config (``bench.dataset.features``), ``decision_points.jsonl``,
the dataset card (``bench.dataset.card_stats`` feeds ``bench.dataset.card``) and ``manifest.json``
(the sha256 of every file and each config's licence data).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

from bench.core.jsonl import sha256_file, write_jsonl, write_text
from bench.dataset.card import CardInput, ConfigStats, render_card
from bench.dataset.card_stats import config_stats, lite_table
from bench.dataset.features import features, hf_row
from bench.dataset.reader import LATEST_FILE, POINTS_FILE
from bench.dataset.records import SPLITS, Built, configs, of_config
from bench.prompts.renderer import DEFAULT_BUDGET

DataFiles = dict[str, dict[str, str]]
"""Config -> split -> parquet path inside the version folder."""


def write_version(out: Path, built: Built) -> Path:
    """Write the version folder atomically (temp folder + rename) and point LATEST at it."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{built.version}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    with _no_progress_bars():
        data_files, stats = _write_parquet(tmp, built)
    write_jsonl(
        tmp / POINTS_FILE,
        (
            r.point.to_dict() | {"split": r.split, "disputed": r.disputed, "lite": r.lite}
            for r in built.records
        ),
    )
    write_text(tmp / "README.md", render_card(_card(built, data_files, stats)))
    _write_manifest(tmp, built)
    final = out / built.version
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    write_text(out / LATEST_FILE, built.version + "\n")
    return final


def _write_parquet(tmp: Path, built: Built) -> tuple[DataFiles, list[ConfigStats]]:
    """One parquet file per config and split; (their paths, each config's card figures)."""
    from datasets import Dataset

    feats = features()
    data_files: DataFiles = {}
    stats = []
    for cfg in configs(built.records):
        mine = of_config(built.records, cfg)
        s = built.source_of(cfg)
        (tmp / cfg).mkdir(exist_ok=True)
        data_files[cfg] = {}
        for split in SPLITS:
            rows = [hf_row(r) for r in mine if r.split == split]
            rel = f"{cfg}/{split}.parquet"
            Dataset.from_list(rows, features=feats).to_parquet(str(tmp / rel))
            data_files[cfg][split] = rel
        stats.append(config_stats(s, mine, built.gold[s.name], built.truncation[cfg], name=cfg))
    return data_files, stats


def _card(built: Built, data_files: DataFiles, stats: list[ConfigStats]) -> CardInput:
    """What the dataset card shows."""
    return CardInput(
        version=built.version,
        configs=tuple(stats),
        dev_fraction=built.plan.dev_fraction,
        seed=built.plan.seed,
        budget=f"{DEFAULT_BUDGET.limit:,} {DEFAULT_BUDGET.kind}",
        templates=built.templates,
        data_files=data_files,
        leakage=built.leakage,
        soft_crossing=tuple(built.plan.soft_crossing),
        soft_joined=tuple(built.plan.soft_joined),
        lite=lite_table(built.records),
        lite_rule=dict(built.lite_rule),
        pairs=built.pairs,
    )


def _write_manifest(tmp: Path, built: Built) -> None:
    """``manifest.json``: the sha256 of every file written so far and each config's licence."""
    files = sorted(p for p in tmp.rglob("*") if p.is_file())
    manifest = {
        "version": built.version,
        "files": {p.relative_to(tmp).as_posix(): sha256_file(p) for p in files},
        "configs": {
            cfg: {"license": s.license, "redistributable": s.redistributable}
            for cfg in configs(built.records)
            for s in (built.source_of(cfg),)
        },
    }
    write_text(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Silence ``datasets``' progress bars for the block (one short write per split: a bar each
    is noise), restoring them only when they were on."""
    import datasets

    if not datasets.is_progress_bar_enabled():
        yield
        return
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        datasets.enable_progress_bars()
