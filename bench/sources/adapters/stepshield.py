"""StepShield (training split): one pretty-printed JSON object per ``.jsonl`` file.

Conversion (see docs/sources.md):
- category is the rogue family (UFO, SEC, RES, INV, TST, DEC), scenario the severity (L1-L3);
- the policy's task is the title, description and success criteria; its constraints are the
  task's constraints;
- every step is an agent turn (thought, a readable ``tool(args)`` action with tool and
  arguments, and its observation);
- the trajectory is unsafe when any step carries a label; the step labels are kept in
  ``metadata["step_labels"]`` as ``{k, step, label, rationale, continuation}``;
- ROGUE and CLEAN variants of a task share the group ``<family>-<severity>-<number>``;
  ``metadata["links"]["task"]`` holds a hash of the exact task text and constraints, because
  StepShield reuses one task across pairs and the split must keep them together too;
- ``level`` is the severity (L1-L3) and ``subset`` is ``synthetic`` for templated pairs (see
  ``templated``), else ``real``.

Synthetic (templated) items: some L1/L2 pairs were generated from a template, not recorded from
an agent. Their actions carry unfilled placeholder arguments (``example_command_7``,
``example_file_3``) and most of their thoughts are a small set of canned sentences shared by
dozens of trajectories; at the rogue step the thought is a fixed phrase ("I need to ...")
followed by a fragment of the upstream rationale, so the label is written in the text. The rule
(``templated``): a trajectory is templated when at least one action holds a placeholder argument
and at least half of its thoughts are canned (a sentence, digits ignored, that at least
``CANNED_MIN_TRAJECTORIES`` trajectories of the source use); a pair is synthetic when either
twin is. They get their own config (``stepshield_synthetic``) that the headline does not score.

``continuation``: present on exactly the labelled steps and always ``false`` in this copy, even
where labelled steps follow each other, so it carries no information beyond the label itself.
It is kept verbatim in each step-label entry and never changes a label.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.core.errors import DataError, RecordError
from bench.core.jsonl import content_hash
from bench.core.schema import Action, Policy, Trajectory, Turn
from bench.sources import register
from bench.sources.adapters._common import field, load_pins, readable_call, str_list
from bench.sources.base import ExtractResult, Reject, Source

FAMILIES = ("UFO", "SEC", "RES", "INV", "TST", "DEC")
"""StepShield's rogue-behaviour families (also the step labels)."""

PLACEHOLDER = re.compile(r"\bexample_(?:command|file)_\d+\b")
"""A template slot never filled: an action argument such as ``example_command_3``."""

CANNED_MIN_TRAJECTORIES = 20
"""A thought (digits ignored) used by at least this many trajectories is a canned sentence."""

CANNED_SHARE = 0.5
"""A templated trajectory has at least this share of canned thoughts."""

_ID = re.compile(
    r"^(?P<pair>(?P<family>[A-Z]{3})-(?P<severity>L[123])-\d+)-(?P<variant>ROGUE|CLEAN)$"
)
"""``SEC-L2-001-ROGUE``: family, severity, number, variant."""


@register("stepshield")
class StepShield(Source):
    """StepShield trajectories as canonical trajectories."""

    folder = "stepshield"
    license = "CC-BY-4.0"
    redistributable = True
    upstream = load_pins("stepshield")
    diagnostic_subsets = ("synthetic",)
    defects = (
        "Only the upstream training split has step labels; the test split is not included.",
        "Each rogue trajectory has a paired clean one; pairs are kept in one split.",
        "Step labels mark the rogue step(s) as the source saw them; onset, act and taxonomy are "
        "mapped by documented rules.",
    )

    def extract(self, path: Path) -> ExtractResult:
        """Convert every ``data/train/<FAMILY>/*.jsonl`` under ``path``."""
        base = path / "data" / "train"
        if not base.is_dir():
            base = path
        files = sorted(base.rglob("*.jsonl"))
        if not files:
            raise DataError(
                f"no StepShield files under {path} (expected data/train/<FAMILY>/*.jsonl): pass "
                "--path pointing at the stepshield folder, or run with --download"
            )
        out = ExtractResult()
        seen: dict[str, str] = {}
        for f in files:
            rel = f.relative_to(path).as_posix()
            try:
                rec = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                out.rejects.append(
                    Reject(self.name, rel, 0, f"file is not one valid JSON object: {e}")
                )
                continue
            sid = rec.get("trajectory_id", "") if isinstance(rec, dict) else ""
            try:
                traj = self._convert(rec, rel)
            except RecordError as e:
                out.rejects.append(Reject(self.name, rel, 0, str(e), str(sid)))
                continue
            if traj.id in seen:
                out.rejects.append(
                    Reject(
                        self.name,
                        rel,
                        0,
                        f"trajectory_id already used by {seen[traj.id]}",
                        traj.source_id,
                    )
                )
                continue
            seen[traj.id] = rel
            out.trajectories.append(traj)
        out.trajectories = mark_synthetic(out.trajectories)
        return out

    def _convert(self, rec: Any, rel: str) -> Trajectory:
        sid = field(rec, "trajectory_id", str)
        m = _ID.match(sid)
        if not m or m.group("family") not in FAMILIES:
            raise RecordError(
                f"trajectory_id {sid!r} is not <FAMILY>-<L1|L2|L3>-<n>-<ROGUE|CLEAN> "
                f"with FAMILY one of {', '.join(FAMILIES)}"
            )
        task = field(rec, "task", dict)
        title = field(task, "title", str, null=True) or ""
        description = field(task, "description", str, null=True) or ""
        constraints = str_list(task, "constraints") if "constraints" in task else ()
        criteria = str_list(task, "success_criteria") if "success_criteria" in task else ()
        steps = field(rec, "steps", list)
        if not steps:
            raise RecordError("steps is empty")
        turns: list[Turn] = []
        step_labels: list[dict[str, Any]] = []
        previous = 0
        for k, s in enumerate(steps, 1):
            try:
                turn, lab, number = _step(s, k)
            except RecordError as e:
                raise RecordError(f"steps[{k - 1}]: {e}") from e
            if number <= previous:
                what = "repeats" if number == previous else "comes after"
                raise RecordError(
                    f"steps[{k - 1}]: step number {number} {what} step {previous}: the steps are "
                    "out of order or duplicated, so which action is which is unknown"
                )
            previous = number
            turns.append(turn)
            if lab is not None:
                step_labels.append(lab)
        if m.group("variant") == "CLEAN" and step_labels:
            raise RecordError("a CLEAN trajectory carries step labels")
        parts = [p for p in (title, description) if p]
        if criteria:
            parts.append("Success criteria:\n" + "\n".join(f"- {c}" for c in criteria))
        policy = Policy(task="\n\n".join(parts), constraints=constraints)
        return Trajectory(
            id=f"{self.name}:{sid}",
            source=self.name,
            source_id=sid,
            category=m.group("family"),
            scenario=m.group("severity"),
            license=self.license,
            policy=policy,
            turns=tuple(turns),
            label="unsafe" if step_labels else "safe",
            group=m.group("pair"),
            subset="real",
            level=m.group("severity"),
            metadata={
                "file": rel,
                "position": 0,
                "variant": m.group("variant"),
                "severity": m.group("severity"),
                "step_labels": step_labels,
                "links": {"task": [content_hash([policy.task, list(policy.constraints)], 16)]},
            },
        )


def _step(s: Any, k: int) -> tuple[Turn, dict[str, Any] | None, int]:
    """One step as an agent turn, its label entry when it carries a label, and its upstream
    step number (k when it has none)."""
    thought = field(s, "thought", str, null=True)
    tool = field(s, "action", str)
    args = field(s, "arguments", dict, null=True) or {}
    observation = field(s, "observation", str, null=True)
    label = field(s, "label", str, null=True) if "label" in s else None
    if label is not None and label not in FAMILIES:
        raise RecordError(f"label {label!r} is not one of {', '.join(FAMILIES)}")
    rationale = field(s, "rationale", str, null=True) if "rationale" in s else None
    cont = field(s, "continuation", bool) if "continuation" in s else None
    upstream_step = field(s, "step", int) if "step" in s else k
    turn = Turn(
        role="agent",
        thought=thought,
        action=Action(text=readable_call(tool, args), tool=tool, arguments=args),
        observation=observation,
    )
    if label is None:
        return turn, None, upstream_step
    entry = {
        "k": k,
        "step": upstream_step,
        "label": label,
        "rationale": rationale,
        "continuation": cont,
    }
    return turn, entry, upstream_step


def _norm_thought(t: Turn) -> str:
    return re.sub(r"\d+", "N", (t.thought or "").strip())


def templated(traj: Trajectory, canned: frozenset[str]) -> bool:
    """True when ``traj`` was generated from a template (module docstring): an action with a
    placeholder argument and at least ``CANNED_SHARE`` of its thoughts canned."""
    steps = [t for t in traj.turns if t.is_action]
    if not steps or not any(PLACEHOLDER.search(t.action.text) for t in steps if t.action):
        return False
    return sum(_norm_thought(t) in canned for t in steps) >= CANNED_SHARE * len(steps)


def mark_synthetic(trajs: list[Trajectory]) -> list[Trajectory]:
    """``trajs`` with ``subset`` set to ``synthetic`` for both twins of every templated pair."""
    users: dict[str, set[str]] = {}
    for t in trajs:
        for turn in t.turns:
            if turn.is_action and turn.thought:
                users.setdefault(_norm_thought(turn), set()).add(t.id)
    canned = frozenset(k for k, v in users.items() if len(v) >= CANNED_MIN_TRAJECTORIES)
    pairs = {t.group for t in trajs if templated(t, canned)}
    return [replace(t, subset="synthetic") if t.group in pairs else t for t in trajs]
