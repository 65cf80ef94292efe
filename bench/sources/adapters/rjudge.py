"""R-Judge (Yuan et al., 2024): 571 records in ``data/<Category>/<file>.json``, each a JSON array.

Conversion (see docs/sources.md):
- ``profile`` is the policy's system text and the first user message its task; the ``goal``
  field is the same judging instruction in every record and is dropped.
- An environment turn right after an agent turn is that step's observation; any other
  environment turn stays an environment turn.
- Action strings are kept verbatim; tool name and arguments are parsed when the string is one
  tool call. The two null actions stay in the trajectory as agent turns without an action and
  are reported as Exclusions.
- ``risk_description``, ``attack_type``, file and position are metadata only (a risk
  description must never reach a judge's prompt).
- Duplicates (identical contents and risk description) are detected, flagged and grouped.
- Injection records are templated: ``user_template``/``attacker_template`` hashes identify the
  user instruction and the injected attacker instruction, and records sharing a user template
  share the group ``rjudge-inj:<hash>``.

Upstream declares no licence: the data is for local evaluation only and is not redistributable.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.core.errors import DataError, RecordError
from bench.core.jsonl import canonical_json, content_hash
from bench.core.schema import Policy, Trajectory, Turn
from bench.sources import register
from bench.sources.adapters._common import field, load_pins, parse_action, upstream_label
from bench.sources.base import Exclusion, ExtractResult, Reject, Source

log = logging.getLogger(__name__)

CATEGORIES = ("Application", "Finance", "IoT", "Program", "Web")
"""R-Judge's five application folders."""

ATTACK_TYPES = ("injection", "unintended")
"""Values of ``attack_type``."""

_ATTACKER = re.compile(r'instruction\s+"(?P<instr>.*)"\s+in the return value', re.S)
"""Where an injection record's risk description quotes the injected attacker instruction."""

TEMPLATE_HASH_LEN = 10
"""Length of the user/attacker template hashes."""


@dataclass(frozen=True)
class _Parsed:
    """One converted record plus what is needed to find its duplicates."""

    traj: Trajectory
    """The trajectory before duplicate/template grouping."""
    dup_key: str
    """Canonical JSON of contents + risk description."""
    id_num: int
    """Upstream integer id."""
    exclusions: tuple[Exclusion, ...]
    """Its null-action turns."""


@register("rjudge")
class RJudge(Source):
    """R-Judge records as canonical trajectories."""

    folder = "r-judge"
    license = "none"
    redistributable = False
    upstream = load_pins("rjudge")
    defects = (
        "No licence is declared upstream: the data is for local evaluation only and must not be "
        "redistributed publicly.",
        "Labels are trajectory-level upstream; the onset step is proposed by documented rules "
        "and only reviewed items carry a reviewer's decision.",
        "Three pairs of records are duplicates; each pair is kept in one split.",
        "The injection records are built from a small set of user and attacker templates; "
        "records sharing a template are kept in one split.",
        "Safe injection records carry the attack template as their risk description; it is not "
        "a rationale for that record (and is never shown to a judge).",
        "Agent turns whose action is null upstream are excluded (no decision point).",
    )

    def extract(self, path: Path) -> ExtractResult:
        """Convert every record of every ``data/<Category>/*.json`` under ``path``."""
        base = path / "data" if (path / "data").is_dir() else path
        files = sorted(base.glob("*/*.json"))
        if not files:
            raise DataError(
                f"no R-Judge files under {path} (expected data/<Category>/<file>.json): pass "
                "--path pointing at the r-judge folder, or run with --download"
            )
        out = ExtractResult()
        parsed: list[_Parsed] = []
        for f in files:
            rel = f.relative_to(path).as_posix()
            try:
                records = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                out.rejects.append(Reject(self.name, rel, 0, f"file is not valid JSON: {e}"))
                continue
            if not isinstance(records, list):
                out.rejects.append(
                    Reject(
                        self.name, rel, 0, f"expected a JSON array, got {type(records).__name__}"
                    )
                )
                continue
            for pos, rec in enumerate(records):
                sid = str(rec.get("id", "")) if isinstance(rec, dict) else ""
                try:
                    parsed.append(self._convert(rec, f.parent.name, f.stem, rel, pos))
                except RecordError as e:
                    out.rejects.append(Reject(self.name, rel, pos, str(e), sid))
        unique: dict[str, _Parsed] = {}
        for p in parsed:
            first = unique.get(p.traj.id)
            if first is not None:
                m = p.traj.metadata
                where = f"{first.traj.metadata['file']}#{first.traj.metadata['position']}"
                out.rejects.append(
                    Reject(
                        self.name,
                        m["file"],
                        m["position"],
                        f"id already used at {where}",
                        p.traj.source_id,
                    )
                )
                continue
            unique[p.traj.id] = p
            out.exclusions.extend(p.exclusions)
        out.trajectories = _group(list(unique.values()))
        return out

    def _convert(self, rec: Any, category: str, stem: str, rel: str, pos: int) -> _Parsed:
        rid = field(rec, "id", int)
        scenario = field(rec, "scenario", str, null=True) or stem
        profile = field(rec, "profile", str, null=True) or ""
        label = upstream_label(rec)
        risk = field(rec, "risk_description", str, null=True) or ""
        attack = field(rec, "attack_type", str)
        if attack not in ATTACK_TYPES:
            raise RecordError(f"attack_type {attack!r} is not one of {', '.join(ATTACK_TYPES)}")
        rounds = field(rec, "contents", list)
        if not rounds:
            raise RecordError("contents is empty")
        raw_turns: list[Mapping[str, Any]] = []
        for r, rnd in enumerate(rounds):
            if not isinstance(rnd, list):
                raise RecordError(
                    f"contents[{r}] is {type(rnd).__name__}, expected a list of turns"
                )
            raw_turns.extend(rnd)
        tid = f"{self.name}:{rid}"
        turns, task, null_actions = _turns(raw_turns)
        exclusions = tuple(
            Exclusion(tid, i, "upstream action is null (no action to judge)") for i in null_actions
        )
        meta: dict[str, Any] = {
            "file": rel,
            "position": pos,
            "attack_type": attack,
            "risk_description": risk,
            "rounds": len(rounds),
        }
        if attack == "injection":
            meta["user_template"] = content_hash(task, TEMPLATE_HASH_LEN)
            m = _ATTACKER.search(risk)
            meta["attacker_template"] = (
                content_hash(m.group("instr"), TEMPLATE_HASH_LEN) if m else None
            )
            if not m:
                log.warning("%s: no quoted attacker instruction in its risk description", tid)
        traj = Trajectory(
            id=tid,
            source=self.name,
            source_id=str(rid),
            category=category,
            scenario=scenario,
            license=self.license,
            policy=Policy(system=profile, task=task),
            turns=tuple(turns),
            label=label,  # type: ignore[arg-type]
            group=tid,
            metadata=meta,
        )
        return _Parsed(traj, canonical_json([rounds, risk]), rid, exclusions)


def _turns(raw: list[Mapping[str, Any]]) -> tuple[list[Turn], str, list[int]]:
    """(turns, task, indices of null-action agent turns). The first user message becomes the task
    and is not repeated as a turn."""
    turns: list[Turn] = []
    task = ""
    nulls: list[int] = []
    first = True
    for j, t in enumerate(raw):
        role = field(t, "role", str)
        if role == "user":
            content = field(t, "content", str, null=True)
            if first:
                task = content or ""
            else:
                turns.append(Turn(role="user", content=content))
        elif role == "agent":
            thought = field(t, "thought", str, null=True)
            action = field(t, "action", str, null=True)
            if action is None:
                nulls.append(len(turns))
            turns.append(
                Turn(
                    role="agent",
                    thought=thought,
                    action=parse_action(action) if action is not None else None,
                )
            )
        elif role == "environment":
            content = field(t, "content", str, null=True)
            prev = raw[j - 1] if j else None
            if (
                turns
                and turns[-1].role == "agent"
                and prev is not None
                and prev.get("role") == "agent"
            ):
                turns[-1] = replace(turns[-1], observation=content)
            else:
                turns.append(Turn(role="environment", content=content))
        else:
            raise RecordError(f"turn {j} has role {role!r}, expected user, agent or environment")
        first = False
    return turns, task, nulls


def _group(parsed: list[_Parsed]) -> list[Trajectory]:
    """Flag duplicates and set groups: duplicates share the group of their lowest id; injection
    records are grouped by user template."""
    by_key: dict[str, list[_Parsed]] = defaultdict(list)
    for p in parsed:
        by_key[p.dup_key].append(p)
    out: list[Trajectory] = []
    for p in parsed:
        t = p.traj
        meta = dict(t.metadata)
        group = t.group
        members = sorted(by_key[p.dup_key], key=lambda q: q.id_num)
        if len(members) > 1:
            canon = members[0].traj.id
            group = canon
            if t.id == canon:
                meta["duplicates"] = [q.traj.id for q in members[1:]]
            else:
                meta["duplicate_of"] = canon
        if meta.get("user_template"):
            group = f"rjudge-inj:{meta['user_template']}"
        subset = "injection" if meta.get("attack_type") == "injection" else "original"
        out.append(replace(t, group=group, metadata=meta, subset=subset))
    return out
