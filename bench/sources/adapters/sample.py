"""The embedded sample corpus: about forty trajectories the project wrote itself.

The corpus lives in the repository as data, one YAML case per trajectory
(``data/sample/cases/<source_id>.yaml``, the authoring format of ``bench.sources.authoring``
shared with the contrast pairs, docs/pairs.md), so the whole pipeline runs on a fresh clone with
no raw data and no network. A case gives the trajectory's policy and turns and its hand-written
gold: ``act``, ``fail``/``harm``/``src`` (names from ``data/taxonomy.toml``, ``NONE`` when safe),
``rationale`` and ``post_act``; the onset and the cited evidence turn are marked on the turns
(``onset: true``, ``cite: true``), so k and cite are computed, never counted by hand. The loaded
record's ``metadata["gold"]`` carries:

- ``onset``: k of the first unsafe action (1-based among agent actions), or null when safe;
- ``act``: ASK or STOP at the onset (null when safe);
- ``fail``, ``harm``, ``src``: taxonomy names (``NONE`` when safe);
- ``cite``: the 1-based number, in the onset decision point's ``history``, of the turn that
  carries the evidence, or null;
- ``rationale``: one sentence in the project's words;
- ``post_act``: the act for steps after the onset (null when the onset is the last action).

Steps before the onset are CONTINUE. ``extract`` checks every case against the schema and that
vocabulary; a malformed case becomes a Reject (file, reason), never a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from bench.core.errors import DataError
from bench.core.labels import ACTS, NONE, OnsetLabel
from bench.core.onset import onset_problems
from bench.core.paths import REPO_ROOT
from bench.core.schema import Role, Trajectory
from bench.core.taxonomy import Taxonomy, load_taxonomy
from bench.sources import register
from bench.sources.authoring import load_case, yaml_files
from bench.sources.base import ExtractResult, Reject, Source
from bench.sources.extraction import bad_text

SAMPLE_DIR = REPO_ROOT / "data" / "sample"
"""The corpus folder in the checkout."""

CASES = "cases"
"""The folder of case files inside the corpus folder."""

CATEGORIES: tuple[str, ...] = (
    "apps_email",
    "finance",
    "iot_home",
    "software_terminal",
    "web",
    "code_agent",
)
"""The kinds of agents the corpus spans."""

LICENSE = "Apache-2.0"
"""The corpus licence (the project's own)."""

_GOLD_KEYS = frozenset({"onset", "act", "fail", "harm", "src", "cite", "rationale", "post_act"})
_TOP_KEYS = frozenset(
    {"id", "source", "source_id", "category", "scenario", "license", "policy", "turns"}
    | {"label", "group", "metadata"}
)
_OPTIONAL_KEYS = {"subset": "", "level": ""}
"""Trajectory fields a corpus line may leave out (the corpus has no subsets or levels)."""
_ROLES = frozenset(get_args(Role))


def check_record(d: Any, tax: Taxonomy) -> list[str]:
    """Every problem with one corpus line (already parsed JSON); empty when it is valid."""
    if not isinstance(d, dict):
        return [f"a line must be a JSON object, not {type(d).__name__}"]
    problems: list[str] = []
    missing = sorted(_TOP_KEYS - d.keys())
    unknown = sorted(d.keys() - _TOP_KEYS - _OPTIONAL_KEYS.keys())
    if missing:
        problems.append(f"missing field(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown field(s) {', '.join(unknown)}")
    if problems:
        return problems
    unstorable = bad_text(d, "")
    if unstorable:
        return [unstorable]
    sid = d["source_id"]
    if d["source"] != "sample":
        problems.append(f"source must be 'sample', not {d['source']!r}")
    if not isinstance(sid, str) or not sid or d["id"] != f"sample:{sid}":
        problems.append(f"id {d['id']!r} must be 'sample:<source_id>' with a non-empty source_id")
    if d["license"] != LICENSE:
        problems.append(f"license must be {LICENSE!r}, not {d['license']!r}")
    if d["category"] not in CATEGORIES:
        problems.append(f"category {d['category']!r} is not one of {', '.join(CATEGORIES)}")
    if not isinstance(d["group"], str) or not d["group"]:
        problems.append("group must be a non-empty string")
    if d["label"] not in ("safe", "unsafe"):
        problems.append(f"label must be 'safe' or 'unsafe', not {d['label']!r}")
    problems += _check_policy(d["policy"])
    if not isinstance(d["turns"], list) or not d["turns"]:
        return problems + ["turns must be a non-empty list"]
    for i, t in enumerate(d["turns"]):
        problems += [f"turn {i}: {p}" for p in _check_turn(t)]
    meta = d["metadata"]
    if not isinstance(meta, dict):
        return problems + ["metadata must be an object"]
    tags = meta.get("tags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append("metadata.tags must be a list of strings")
    if problems:
        return problems
    try:
        traj = Trajectory.from_dict(d)
    except (KeyError, TypeError, ValueError) as e:
        return [f"not a Trajectory: {e!r}"]
    if json.loads(json.dumps(traj.to_dict())) != _OPTIONAL_KEYS | d:
        problems.append("line is not in canonical Trajectory.to_dict() form (extra or odd keys)")
    return problems + _check_gold(traj, meta.get("gold"), tax)


def _check_policy(p: Any) -> list[str]:
    if not isinstance(p, dict) or set(p) != {"system", "task", "constraints"}:
        return ["policy must be an object with exactly system, task and constraints"]
    out = []
    if not isinstance(p["system"], str) or not p["system"].strip():
        out.append("policy.system must be a non-empty string")
    if not isinstance(p["task"], str):
        out.append("policy.task must be a string")
    cons = p["constraints"]
    if not isinstance(cons, list) or not all(isinstance(c, str) and c for c in cons):
        out.append("policy.constraints must be a list of non-empty strings")
    return out


def _check_turn(t: Any) -> list[str]:
    if not isinstance(t, dict):
        return ["not an object"]
    role = t.get("role")
    if role not in _ROLES:
        return [f"role {role!r} is not one of {', '.join(sorted(_ROLES))}"]
    if role != "agent":
        ok = isinstance(t.get("content"), str) and t["content"].strip()
        extra = [k for k in ("thought", "action", "observation") if t.get(k) is not None]
        out = [] if ok else [f"a {role} turn needs non-empty content"]
        return out + ([f"a {role} turn has agent fields {extra}"] if extra else [])
    a = t.get("action")
    if not isinstance(a, dict) or not isinstance(a.get("text"), str) or not a["text"].strip():
        return ["an agent turn needs an action with non-empty text"]
    if a.get("tool") is not None and not isinstance(a.get("arguments"), dict):
        return ["a tool action needs an arguments object"]
    for k in ("thought", "observation"):
        if t.get(k) is not None and not isinstance(t[k], str):
            return [f"{k} must be a string or null"]
    return []


def _check_gold(traj: Trajectory, g: Any, tax: Taxonomy) -> list[str]:
    if not isinstance(g, dict):
        return ["metadata.gold must be an object"]
    if set(g) != _GOLD_KEYS:
        return [f"metadata.gold must have exactly the keys {', '.join(sorted(_GOLD_KEYS))}"]
    out: list[str] = []
    if not isinstance(g["rationale"], str) or not g["rationale"].strip():
        out.append("gold.rationale must be a non-empty sentence")
    for k in ("fail", "harm", "src"):
        if not isinstance(g[k], str):
            return out + [f"gold.{k} must be a taxonomy name or NONE"]
    for k in ("act", "post_act"):
        if g[k] is not None and g[k] not in ACTS:
            return out + [f"gold.{k} {g[k]!r} is not one of {', '.join(ACTS)} or null"]
    onset = g["onset"]
    if (onset is None) != (traj.label == "safe"):
        out.append(f"gold.onset {onset!r} does not agree with the label {traj.label!r}")
    decision = OnsetLabel(
        onset=onset,
        act=g["act"],
        fail=g["fail"],
        harm=g["harm"],
        src=g["src"],
        cite=g["cite"],
        post_act=g["post_act"],
    )
    problems = onset_problems(traj, decision, tax)
    out += [f"gold: {p}" for p in problems]
    if problems or onset is None:
        if onset is None and g["post_act"] is not None:
            out.append("gold.post_act must be null in a safe trajectory")
        return out
    for k in ("fail", "harm", "src"):
        if g[k] == NONE:
            out.append(f"gold.{k} must name the {k} of an unsafe trajectory, not NONE")
    n = len(traj.actions())
    if onset < n and g["post_act"] is None:
        out.append(f"gold.post_act must be one of {', '.join(ACTS)} when steps follow the onset")
    if onset == n and g["post_act"] is not None:
        out.append("gold.post_act must be null when the onset is the last action")
    return out


@register("sample")
class SampleSource(Source):
    """The project's own corpus, shipped in the repository."""

    folder = "sample"
    license = LICENSE
    redistributable = True
    upstream = None
    defects = (
        "A small corpus written by the project for smoke tests and demos; not a measurement.",
        "Its gold labels were written together with the corpus by the project and have not "
        "been independently reviewed.",
    )

    def default_path(self, data_root: Path | None = None) -> Path:
        """Always the checkout's ``data/sample``: the corpus is not part of the raw-data root."""
        return SAMPLE_DIR

    def extract(self, path: Path) -> ExtractResult:
        """Read every case under ``path`` (the corpus folder, its ``cases/`` folder or one case
        file), in file-name order; every malformed case becomes a Reject with the reasons."""
        folder = path / CASES if (path / CASES).is_dir() else path
        if not folder.exists():
            raise DataError(
                f"sample corpus {path} not found: pass the folder holding {CASES}/*.yaml "
                f"(the default is {SAMPLE_DIR})"
            )
        files = yaml_files(folder)
        tax = load_taxonomy()
        result = ExtractResult()
        seen: set[str] = set()
        for pos, file in enumerate(files):
            rel = file.relative_to(folder.parent) if file.is_relative_to(folder.parent) else file
            loaded = load_case(file, "sample")
            if loaded.problems:
                reason = "; ".join(f"{p.field}: {p.message}" for p in loaded.problems)
                result.rejects.append(_reject(str(rel), pos, reason, file.stem))
                continue
            d = loaded.records[0]
            problems = check_record(d, tax)
            if not problems and d["id"] in seen:
                problems = [f"duplicate id {d['id']!r}"]
            if problems:
                result.rejects.append(_reject(str(rel), pos, "; ".join(problems), file.stem))
                continue
            seen.add(d["id"])
            result.trajectories.append(Trajectory.from_dict(d))
        return result


def _reject(file: str, pos: int, reason: str, source_id: str = "") -> Reject:
    return Reject(source="sample", file=file, position=pos, reason=reason, source_id=source_id)
