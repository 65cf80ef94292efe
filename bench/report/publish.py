"""Publishing the leaderboard's results to a Hub dataset repository, in one commit.

``plan_upload`` lists what goes up, from the leaderboards folder:
- every table, ``leaderboard.json``, the paired statistics and the plots;
- the ground truth (ids and labels only) and the reward matrix;
- every predictions file for the ground truth's dataset version, stress files included.

Predictions lines of a source that may not be redistributed (R-Judge: no licence) keep their ids
and verdicts, but the judge's raw output and reason are emptied (``raw_withheld: true``). A judge's
answer can quote the trajectory, which may not leave this machine. ``push_results`` uploads the
planned files with ``HfApi.create_commit`` and returns the commit the Space can pin
(``FORESIGHT_RESULTS_REPO``). ``--dry-run`` prints the plan and uploads nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataset.hub import PublishError, PushResult
from bench.judging import backends, predictions
from bench.report.tables import OUTPUT_BINARIES, OUTPUT_TEXTS
from bench.sources.licence import may_redistribute

EXTRA_FILES = ("ground_truth.jsonl", "ground_truth.meta.json", "cost_matrix.toml")
"""Inputs published beside the tables (no upstream text in any of them)."""


@dataclass(frozen=True)
class Upload:
    """One file of the commit."""

    path_in_repo: str
    """Where it goes."""
    data: bytes
    """What goes there."""
    withheld: int = 0
    """Lines whose raw output was emptied."""


def withheld_sources(meta: Mapping[str, Any]) -> frozenset[str]:
    """Sources whose text may not be redistributed, from the ground truth's meta."""
    out = set()
    for name, cfg in (meta.get("configs") or {}).items():
        if not may_redistribute(cfg.get("license", ""), cfg.get("redistributable")):
            out.add(str(cfg.get("source") or name))
    return frozenset(out)


def _scrubbed(path: Path, withheld: frozenset[str]) -> tuple[bytes, int]:
    """A predictions file with the raw output of withheld sources' decisions emptied."""
    rows, bad = predictions.scan(path)
    if bad:
        raise PublishError(f"{bad[0]}: fix the predictions file before publishing")
    out, n = [], 0
    for r in rows:
        if r.get("type") == "decision" and str(r.get("id", "")).split(":", 1)[0] in withheld:
            if r.get("raw") or r.get("reason"):
                n += 1
            r = {**r, "raw": "", "reason": "", "raw_withheld": True}
        out.append(json.dumps(r, ensure_ascii=False, sort_keys=True))
    return ("\n".join(out) + "\n").encode("utf-8"), n


def _generative(rows: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a predictions file is a generative judge's (its run line's backend; an unknown
    or missing backend counts as generative). A scorer's ``raw`` is its rule's name, not text."""
    for r in rows:
        if r.get("type") == "run":
            name = str((r.get("config") or {}).get("backend", ""))
            try:
                return bool(backends.get(name).generative)
            except Exception:  # an unregistered backend: assume it writes text
                return True
    return True


def _quotes(r: Any, withheld: frozenset[str]) -> bool:
    """Whether a predictions line is a decision on a withheld source with a raw output."""
    return (
        isinstance(r, dict)
        and r.get("type") == "decision"
        and str(r.get("id", "")).split(":", 1)[0] in withheld
        and bool(r.get("raw"))
    )


def withhold_in_place(pred_dir: Path, meta: Mapping[str, Any]) -> dict[str, int]:
    """Empty a generative judge's raw output and the reason parsed from it on withheld
    sources' decisions, in every predictions file under ``pred_dir``, in place (before the
    files are committed to a public repository); path -> lines changed, for the files that
    changed. Verdicts stay, so no figure moves. Malformed lines are kept as they are (the
    reader reports them), and so is a crash-truncated last line."""
    withheld = withheld_sources(meta)
    changed: dict[str, int] = {}
    if not withheld:
        return changed
    for path in sorted(pred_dir.rglob("*.jsonl")):
        text = path.read_text(encoding="utf-8")
        parsed: list[tuple[str, Any]] = []
        for line in text.splitlines():
            try:
                parsed.append((line, json.loads(line)))
            except ValueError:
                parsed.append((line, None))
        if not _generative(r for _, r in parsed if isinstance(r, dict)):
            continue
        out, n = [], 0
        for line, r in parsed:
            if _quotes(r, withheld):
                r = {**r, "raw": "", "reason": "", "raw_withheld": True}
                line = json.dumps(r, ensure_ascii=False, sort_keys=True)
                n += 1
            out.append(line)
        if n:
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_text("\n".join(out) + ("\n" if text.endswith("\n") else ""), encoding="utf-8")
            os.replace(tmp, path)
            changed[str(path.relative_to(pred_dir))] = n
    return changed


def unwithheld_lines(paths: Iterable[Path], meta: Mapping[str, Any]) -> dict[str, int]:
    """path -> decisions of withheld sources that still carry a generative judge's raw output."""
    withheld = withheld_sources(meta)
    out: dict[str, int] = {}
    for path in paths:
        rows, _ = predictions.scan(path)
        n = sum(_quotes(r, withheld) for r in rows) if _generative(rows) else 0
        if n:
            out[str(path)] = n
    return out


def plan_upload(
    folder: Path, pred_dir: Path, version: str, meta: Mapping[str, Any]
) -> list[Upload]:
    """Every file of the commit (module docstring), sorted by path: the outputs in ``folder``
    and the predictions under ``pred_dir`` (as ``predictions/...``)."""
    withheld = withheld_sources(meta)
    files: list[Upload] = []
    names: Iterable[str] = (*OUTPUT_TEXTS, *OUTPUT_BINARIES, *EXTRA_FILES)
    for name in names:
        p = folder / name
        if p.is_file():
            files.append(Upload(name, p.read_bytes()))
    for p in sorted((folder / "plots").glob("*.png")):
        files.append(Upload(f"plots/{p.name}", p.read_bytes()))
    for p in sorted(pred_dir.glob(f"*/{version}/**/*.jsonl")):
        data, n = _scrubbed(p, withheld)
        files.append(Upload("predictions/" + p.relative_to(pred_dir).as_posix(), data, n))
    if not any(f.path_in_repo == "leaderboard.json" for f in files):
        raise PublishError(f"no leaderboard.json in {folder}: run python bench/leaderboard.py")
    return sorted(files, key=lambda f: f.path_in_repo)


def push_results(
    uploads: list[Upload],
    repo: str,
    *,
    private: bool,
    message: str,
    token: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
    """Create (or reuse) the dataset repository and commit every planned file at once."""
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        info = api.create_commit(
            repo_id=repo,
            repo_type="dataset",
            operations=[CommitOperationAdd(u.path_in_repo, u.data) for u in uploads],
            commit_message=message,
        )
    except Exception as e:  # noqa: BLE001 - any hub failure becomes one actionable message
        raise PublishError(
            f"upload to {repo} failed: {e}; check HF_TOKEN (write access) and the network, then "
            "rerun with --push-to-hub"
        ) from e
    return PushResult(
        repo=repo,
        commit=getattr(info, "oid", None) or "",
        url=getattr(info, "commit_url", "") or str(info),
        private=private,
    )
