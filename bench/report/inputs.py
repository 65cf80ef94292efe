"""What the leaderboard reads: the ground truth, judges.toml rows, and the predictions files.

``discover`` picks, per judge, the one predictions file to score for the ground truth's dataset
version, and lists the files it refused (another dataset version) or that a newer config of the
same judge superseded. Used by ``bench/leaderboard.py``; scoring is ``bench.report.report``.
"""

from __future__ import annotations

import json
import logging
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError, DataError, IntegrityError
from bench.core.jsonl import read_jsonl
from bench.core.paths import prediction_cache
from bench.judging import backends
from bench.report import columns
from bench.report.columns import DecisionColumns, DecisionRows

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeInfo:
    """What the leaderboard uses from a judges.toml row."""

    id: str
    """The judge's id."""
    display_name: str
    """Name shown in the tables."""
    backend: str
    """Backend name ('' when unknown)."""
    open_weights: bool | None
    """Whether the weights are open, when stated."""
    price_input_per_mtok: float | None
    """Dollars per million input tokens, when known."""
    price_output_per_mtok: float | None
    """Dollars per million output tokens, when known."""
    role: str = "judge"
    """``judge`` (ranked) or ``probe`` (a reference line, never ranked)."""
    fitted_on_dev: bool = False
    """Fitted or tuned on this benchmark's dev split (every learned-baseline backend is)."""
    model: str = ""
    """Model id or folder, when the row names one."""
    revision: str = ""
    """Pinned model revision, when the row gives one."""
    license: str = ""
    """Licence of the model or code."""
    submitted_by: str = ""
    """Who added the row."""
    notes: str = ""
    """The row's notes."""


def _fits_on_dev(backend: str) -> bool:
    """Whether a backend is fitted on the dev split (unknown backends: no)."""
    try:
        return backends.get(backend).fits_on_dev
    except ConfigError:
        return False


@dataclass(frozen=True)
class PredictionFile:
    """One predictions file, read and reduced to the columns scoring needs."""

    judge: str
    """Judge id (the first folder level)."""
    dataset_version: str
    """Dataset version (the second folder level)."""
    config_hash: str
    """The file's stem."""
    rel: str
    """Path relative to the predictions folder (stable across machines)."""
    runs: tuple[Mapping[str, Any], ...]
    """Its run lines in file order."""
    columns: DecisionColumns
    """The last decision per id, checked, as arrays (ids in order of first appearance)."""

    @property
    def decisions(self) -> Mapping[str, Mapping[str, Any]]:
        """id -> the last decision for that id, as a row built on demand from ``columns``."""
        return DecisionRows(self.columns)


# --------------------------------------------------------------------------- reading


def load_ground_truth(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows and meta (``<stem>.meta.json`` beside it). Raises DataError when either is missing."""
    if not path.is_file():
        raise DataError(
            f"no ground truth at {path}: build the dataset first (python bench/build.py), or pass "
            "--ground-truth"
        )
    meta_path = path.with_name(path.stem + ".meta.json")
    if not meta_path.is_file():
        raise DataError(
            f"{meta_path} is missing: rebuild the ground truth with python bench/build.py"
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if not meta.get("dataset_version"):
        raise DataError(f"{meta_path} has no dataset_version: rebuild the ground truth")
    return list(read_jsonl(path)), meta


def load_judges(path: Path) -> dict[str, JudgeInfo]:
    """judges.toml rows by id (display name, backend, prices); {} when the file does not exist.
    Validation of the rest of the row is decide's job."""
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(
            f"{path}: not valid TOML ({e}); run python bench/decide.py --check"
        ) from e
    out: dict[str, JudgeInfo] = {}
    for row in data.get("judge", []):
        jid = row.get("id")
        if not isinstance(jid, str):
            raise ConfigError(
                f"{path}: a [[judge]] row has no id; run python bench/decide.py --check"
            )
        backend = str(row.get("backend") or "")
        out[jid] = JudgeInfo(
            id=jid,
            display_name=str(row.get("display_name") or jid),
            backend=backend,
            open_weights=row.get("open_weights"),
            price_input_per_mtok=_num(row.get("usd_per_m_input")),
            price_output_per_mtok=_num(row.get("usd_per_m_output")),
            role="probe" if row.get("role") == "probe" else "judge",
            fitted_on_dev=row.get("fitted_on_dev") is True or _fits_on_dev(backend),
            model=str(row.get("model") or ""),
            revision=str(row.get("revision") or ""),
            license=str(row.get("license") or ""),
            submitted_by=str(row.get("submitted_by") or ""),
            notes=str(row.get("notes") or ""),
        )
    return out


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def read_predictions(path: Path, root: Path, cache: Path | None = None) -> PredictionFile:
    """Read one predictions file: run lines kept, every decision line checked by the one
    validator, the last one per id wins, a torn final line skipped (``bench.report.columns``;
    from ``cache`` when it holds this content, so an unchanged file is parsed once). A corrupt
    line (not UTF-8, not JSON, not an object, a decision without an id) raises DataError naming
    the file and line, from the cache too. An id answered more than once (two runs appending to
    one file) is logged as one warning for the file, with the count; an errored decision
    answered later is the normal resume and does not count."""
    rel = path.relative_to(root)
    if len(rel.parts) != 3 and not (len(rel.parts) == 5 and rel.parts[2] == "stress"):
        raise DataError(
            f"{path}: expected predictions/<judge>/<dataset_version>/<config_hash>.jsonl (or "
            "<judge>/<dataset_version>/stress/<family>/<config_hash>.jsonl)"
        )
    red = columns.load(path, cache)
    bad = red.bad_lines(str(path))
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise DataError(
            f"{bad[0]}{more}: fix or delete that line, or delete the file and rerun "
            f"`python bench/decide.py --judge {rel.parts[0]}`"
        )
    _warn_repeats(rel.as_posix(), red)
    return PredictionFile(
        judge=rel.parts[0],
        dataset_version=rel.parts[1],
        config_hash=path.stem,
        rel=rel.as_posix(),
        runs=red.runs,
        columns=red.columns,
    )


def _warn_repeats(rel: str, red: columns.Reduced) -> None:
    """One warning per file whose ids were answered more than once, identical answers
    included: the usual cause is two runs appending to the same file, each paying for every
    call."""
    if not red.repeated:
        return
    differ = (
        f"; {len(red.changed)} id(s) were decided more than once with different verdicts "
        f"(e.g. {red.changed[0]})"
        if red.changed
        else "; every repeat gave the same verdict"
    )
    log.warning(
        "%s: %d id(s) were answered more than once (e.g. %s): two runs appending to one "
        "file?%s. Each id counts once, its last line wins",
        rel,
        len(red.repeated),
        red.repeated[0],
        differ,
    )


def _run_version(f: PredictionFile) -> str:
    """The dataset version a file claims: its folder, unless a run line says otherwise."""
    claimed = {str(r["dataset_version"]) for r in f.runs if r.get("dataset_version")}
    if claimed - {f.dataset_version}:
        return "/".join(sorted(claimed | {f.dataset_version}))
    return f.dataset_version


def _start(f: PredictionFile) -> str:
    keys = ("start_time", "started_at", "start", "time")
    times = [str(r[k]) for r in f.runs for k in keys if r.get(k)]
    return max(times) if times else ""


def _cache_dir(cache: Path | bool) -> Path | None:
    """The cache folder a ``cache`` argument names: True, the default one
    (``bench.core.paths.prediction_cache``); False, none."""
    if cache is True:
        return prediction_cache()
    return cache or None


def discover(
    pred_dir: Path, version: str, cache: Path | bool = True
) -> tuple[dict[str, PredictionFile], list[dict[str, str]], list[dict[str, str]]]:
    """(judge -> the file to score, refused files, superseded files). Files for another dataset
    version are refused by name, never mixed; when a judge has several files for this version
    (several configs), the one with the latest run start is scored and the others listed.
    ``cache``: where reductions are kept (True: ``work/cache/predictions``; False: none)."""
    where = _cache_dir(cache)
    files = sorted(pred_dir.glob("*/*/*.jsonl")) if pred_dir.is_dir() else []
    chosen: dict[str, list[PredictionFile]] = {}
    refused: list[dict[str, str]] = []
    for p in files:
        f = read_predictions(p, pred_dir, where)
        other = {str(r["judge_id"]) for r in f.runs if r.get("judge_id")} - {f.judge}
        if other:
            raise IntegrityError(
                f"{p}: run lines name judge {sorted(other)}, folder says {f.judge!r}; move the file"
            )
        v = _run_version(f)
        if v != version:
            refused.append(
                {
                    "judge": f.judge,
                    "dataset_version": v,
                    "path": f.rel,
                    "reason": f"dataset version {v!r} is not the ground truth's {version!r}",
                }
            )
            continue
        chosen.setdefault(f.judge, []).append(f)
    out: dict[str, PredictionFile] = {}
    superseded: list[dict[str, str]] = []
    for judge, fs in sorted(chosen.items()):
        fs.sort(key=lambda f: (_start(f), f.rel))
        out[judge] = fs[-1]
        superseded += [
            {"judge": judge, "path": f.rel, "reason": f"older config than {fs[-1].config_hash}"}
            for f in fs[:-1]
        ]
    return out, refused, superseded


def discover_stress(
    pred_dir: Path, version: str, chosen: Mapping[str, PredictionFile], cache: Path | bool = True
) -> tuple[dict[str, dict[str, PredictionFile]], list[dict[str, str]]]:
    """(family -> judge -> stress file, stale files). A stress file counts only when it was made
    with the config the leaderboard scores for that judge (``chosen``); others are listed as
    stale, never compared with another config's originals."""
    out: dict[str, dict[str, PredictionFile]] = {}
    stale: list[dict[str, str]] = []
    if not pred_dir.is_dir():
        return out, stale
    where = _cache_dir(cache)
    for p in sorted(pred_dir.glob(f"*/{version}/stress/*/*.jsonl")):
        f = read_predictions(p, pred_dir, where)
        family = p.parent.name
        main = chosen.get(f.judge)
        if main is None or main.config_hash != f.config_hash:
            stale.append(
                {
                    "judge": f.judge,
                    "path": f.rel,
                    "reason": "no scored predictions with this config for the originals",
                }
            )
            continue
        out.setdefault(family, {})[f.judge] = f
    return dict(sorted(out.items())), stale
