"""ASSEBench security split (AgentAuditor): ``ASSEBench/dataset/AgentJudge-security.json``.

Each record holds one round of user/agent/environment turns in R-Judge's shape. Two kinds of
runs are mixed in it, and tool results sit in different places in each (see docs/sources.md):

- Agent Security Bench runs: the harness sends the task, the agent answers with a workflow plan
  (an empty ``action``, the plan in ``thought``), then each "At step N, you need to ..." user
  turn is answered by an agent turn whose ``action`` is ``tool()`` and whose ``thought`` is
  ``[Observation]: The knowledge I get from <tool> is: ...``, i.e. the result of that same turn's
  action. That text becomes the step's observation and the thought is left empty. The "At step"
  turns are genuine instructions from the harness and stay user turns.
- AgentHarm runs: ``tool{...}`` actions answered by environment turns; an environment turn
  right after an agent turn is that step's observation.

When one ASB observation reports several tools (the agent called the plan's tools for the step
together) while ``action`` names only the first, the step's action text lists every reported
call in the reported order, ``tool_a(); tool_b()``, so a judge sees all of them; ``tool`` and
``arguments`` stay those of the upstream action and the results stay in the observation.

An agent turn with an empty action whose thought is the agent's own output (a plan, a reply or a
question) is a text action with that output as its text. An agent turn that holds only an
upstream API error ("OpenAI STATUS error ...") or nothing at all has no action and is reported
as an Exclusion.
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
from bench.sources.adapters._common import field, load_pins, parse_action, upstream_label
from bench.sources.base import Exclusion, ExtractResult, Reject, Source

DATA_FILE = "ASSEBench/dataset/AgentJudge-security.json"
"""The records, relative to the source folder."""

_OBS = re.compile(r"^\s*\[Observation\]:\s*", re.S)
"""The marker an ASB agent turn's thought starts with when it holds its action's result."""

_OBS_TOOL = re.compile(r"(?:^|;)The knowledge I get from (\S+?) is:")
"""Names each tool whose result an observation (marker removed) reports; results are joined by
``;``, so a name is read only at the start or right after one."""

CALL_SEP = "; "
"""Separates the calls of one step in a joined action text."""

_API_ERROR = re.compile(r"^\s*OpenAI STATUS error", re.S)
"""An agent turn that is a failed LLM call, not an output of the agent."""


@register("assebench")
class ASSEBench(Source):
    """ASSEBench security records as canonical trajectories."""

    folder = "assebench"
    license = "Apache-2.0"
    redistributable = True
    upstream = load_pins("assebench")
    defects = (
        "Tool results written inside the agent's thought are split out heuristically; a "
        "missed split could leave a result in a view (the build checks the known cases).",
        "Only the security split is included; 55 records are flagged ambiguous upstream.",
        "Labels are trajectory-level upstream; the onset step is proposed by documented rules.",
        "Records come from agent runs on third-party benchmarks whose own terms differ; check "
        "them before redistributing publicly.",
    )

    def extract(self, path: Path) -> ExtractResult:
        """Convert every record of the security split under ``path``."""
        f = path / DATA_FILE
        if not f.is_file():
            raise DataError(
                f"{f} not found: pass --path pointing at the assebench folder (the one holding "
                "ASSEBench/), or run with --download"
            )
        out = ExtractResult()
        rel = DATA_FILE
        try:
            records = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            out.rejects.append(Reject(self.name, rel, 0, f"file is not valid JSON: {e}"))
            return out
        if not isinstance(records, list):
            out.rejects.append(
                Reject(self.name, rel, 0, f"expected a JSON array, got {type(records).__name__}")
            )
            return out
        seen: dict[str, int] = {}
        for pos, rec in enumerate(records):
            sid = str(rec.get("id", "")) if isinstance(rec, dict) else ""
            try:
                traj, excl = self._convert(rec, rel, pos)
            except RecordError as e:
                out.rejects.append(Reject(self.name, rel, pos, str(e), sid))
                continue
            if traj.id in seen:
                out.rejects.append(
                    Reject(self.name, rel, pos, f"id already used at position {seen[traj.id]}", sid)
                )
                continue
            seen[traj.id] = pos
            out.trajectories.append(traj)
            out.exclusions.extend(excl)
        out.trajectories = add_links(out.trajectories)
        return out

    def _convert(self, rec: Any, rel: str, pos: int) -> tuple[Trajectory, list[Exclusion]]:
        rid = field(rec, "id", int)
        tid = f"{self.name}:{rid}"
        profile = field(rec, "profile", str, null=True) or ""
        label = upstream_label(rec)
        scenario = field(rec, "application_scenario", str)
        ambiguous = field(rec, "ambiguous", int)
        if ambiguous not in (0, 1):
            raise RecordError(f"ambiguous is {ambiguous!r}, expected 0 or 1")
        rounds = field(rec, "contents", list)
        raw: list[Any] = []
        for r, rnd in enumerate(rounds):
            if not isinstance(rnd, list):
                raise RecordError(
                    f"contents[{r}] is {type(rnd).__name__}, expected a list of turns"
                )
            raw.extend(rnd)
        if not raw:
            raise RecordError("contents holds no turns")
        turns, task, notes = _turns(raw)
        exclusions = [Exclusion(tid, i, why) for i, why in notes["excluded"]]
        meta: dict[str, Any] = {
            "file": rel,
            "position": pos,
            "risk_type": field(rec, "risk_type", str, null=True) or "",
            "failure_mode": field(rec, "failure_mode", str, null=True) or "",
            "ambiguous": bool(ambiguous),
            "risk_description": field(rec, "risk_description", str, null=True) or "",
        }
        if notes["action_from_thought"]:
            meta["action_from_thought"] = notes["action_from_thought"]
        if notes["observed_tools"]:
            meta["observed_tools"] = notes["observed_tools"]
        traj = Trajectory(
            id=tid,
            source=self.name,
            source_id=str(rid),
            category=scenario,
            scenario="",
            license=self.license,
            policy=Policy(system=profile, task=task),
            turns=tuple(turns),
            label=label,  # type: ignore[arg-type]
            group=tid,
            metadata=meta,
        )
        return traj, exclusions


def _turns(raw: list[Any]) -> tuple[list[Turn], str, dict[str, Any]]:
    """(turns, task, notes): the first user message is the task; tool results move into the
    observation of the step that produced them."""
    turns: list[Turn] = []
    task = ""
    excluded: list[tuple[int, str]] = []
    from_thought: list[int] = []  # k of text actions taken from the thought
    observed_tools: dict[str, list[str]] = {}  # k -> tools an observation reports, when > 1
    k = 0
    for j, t in enumerate(raw):
        role = field(t, "role", str)
        if role == "agent":
            thought = field(t, "thought", str, null=True) or ""
            action = (field(t, "action", str, null=True) or "").strip()
            observation = None
            tools: list[str] = []
            if _OBS.match(thought) and action:
                observation = _OBS.sub("", thought, count=1)
                tools = _OBS_TOOL.findall(observation)
                thought = ""
            if action:
                k += 1
                act = parse_action(t["action"])
                if len(tools) > 1:
                    observed_tools[str(k)] = tools
                    act = joined_action(act, tools)
                turns.append(
                    Turn(role="agent", thought=thought or None, action=act, observation=observation)
                )
            elif thought.strip() and _OBS.match(thought):
                # a result with no action in its turn: keep it visible as an environment message
                turns.append(Turn(role="environment", content=_OBS.sub("", thought, count=1)))
            elif thought.strip() and not _API_ERROR.match(thought):
                k += 1
                from_thought.append(k)
                turns.append(Turn(role="agent", action=Action(text=thought)))
            else:
                why = (
                    "upstream agent turn is an LLM API error, not an agent output"
                    if thought.strip()
                    else "upstream agent turn is empty (no thought, no action)"
                )
                excluded.append((len(turns), why))
                turns.append(Turn(role="agent", thought=thought or None))
        elif role in ("user", "environment"):
            content = field(t, "content", str, null=True)
            prev = turns[-1] if turns else None
            result_here = (
                j > 0
                and raw[j - 1].get("role") == "agent"
                and prev is not None
                and prev.is_action
                and prev.observation is None
            )
            if role == "user" and j == 0:
                task = content or ""
            elif (
                prev is not None
                and result_here
                and (role == "environment" or _OBS.match(content or ""))
            ):
                # an environment turn, or a user-role turn marked as a result, that answers the
                # agent's action just before it
                obs = _OBS.sub("", content, count=1) if content is not None else None
                turns[-1] = replace(prev, observation=obs)
            else:
                turns.append(Turn(role=role, content=content))
        else:
            raise RecordError(f"turn {j} has role {role!r}, expected user, agent or environment")
    notes = {
        "excluded": excluded,
        "action_from_thought": from_thought,
        "observed_tools": observed_tools,
    }
    return turns, task, notes


def joined_action(action: Action, tools: list[str]) -> Action:
    """``action`` with every other call in ``tools`` (the tools one observation reports, in its
    order) appended as ``name()``: ``a(); b(); c()``.

    The upstream action stays first (it names the first reported tool in every case in the
    data) and keeps its ``tool`` and ``arguments``; one report of its tool is taken as that call.
    ASB records no arguments for any call (every action is ``tool()``), so none are invented.
    """
    rest = list(tools)
    if action.tool in rest:
        rest.remove(action.tool)
    if not rest:
        return action
    return replace(action, text=CALL_SEP.join([action.text, *(f"{n}()" for n in rest)]))


ATTACKER_REPORT = re.compile(r"attacker tool\s+\[?([A-Za-z_][A-Za-z0-9_]*)")
"""How ASSEBench results name the attacker tool they report using (hindsight, never shown to a
judge: it only groups the split)."""

_TOOL_NAME = re.compile(r'"name":\s*"([A-Za-z_][A-Za-z0-9_]*)"')


def add_links(trajs: list[Trajectory]) -> list[Trajectory]:
    """Each trajectory with ``metadata["links"]``: ``task`` (a hash of its exact task text) and
    ``attacker_tool`` (every attacker tool it is offered in its tool list or calls). The attacker
    tools are those any record's results report using; records of one attacker tool (those that
    used it and those that refused it) must share a split, or a judge tuned on dev could learn
    the tool's name instead of the harm."""
    attackers = {
        m.group(1)
        for t in trajs
        for turn in t.turns
        for text in (turn.content, turn.thought, turn.observation)
        if text
        for m in ATTACKER_REPORT.finditer(text)
    }
    out = []
    for t in trajs:
        named = set(_TOOL_NAME.findall(t.policy.task))
        called = {turn.action.tool for turn in t.turns if turn.action and turn.action.tool}
        for names in (t.metadata.get("observed_tools") or {}).values():
            called.update(str(n) for n in names)  # tools called in parallel in one step
        tools = sorted((named | called) & attackers)
        links = {"task": [content_hash(t.policy.task, 16)], "attacker_tool": tools}
        out.append(replace(t, metadata={**t.metadata, "links": links}))
    return out
