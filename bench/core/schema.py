"""The canonical records: trajectories, turns and decision points (gold labels: core.labels).

A *trajectory* is what an agent did under a policy: ordered turns of user messages, agent steps
(thought, action, and the observation that came back) and other environment messages. A
*decision point* is one agent action seen from just before it executes: the policy, every turn
before it (with their observations) and the action itself with its thought, but never the
action's own observation nor anything after it. ``decision_points`` is the only place that cut
is made, so no other code can leak a result into a judge's view.

Records are frozen dataclasses; ``to_dict``/``from_dict`` give the JSONL form and
``content_hash`` a stable hash of that form.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bench.core.jsonl import canonical_json, content_hash
from bench.core.labels import GoldLabel

Role = Literal["user", "agent", "environment"]
"""Who a turn is from."""
TrajectoryLabel = Literal["safe", "unsafe"]
"""A whole trajectory's label."""
Split = Literal["dev", "test"]
"""dev (judges may fit or tune on it) or test (the leaderboard)."""


@dataclass(frozen=True)
class Policy:
    """What the agent works under, shown to every judge."""

    system: str = ""
    """The agent's system profile or role description."""
    task: str = ""
    """The user's task as first given (may be empty when the first user turn carries it)."""
    constraints: tuple[str, ...] = ()
    """Explicit constraints the task states (StepShield's constraints, for example)."""

    def text(self) -> str:
        """All policy text joined, for leak checks and length accounting."""
        return "\n".join([self.system, self.task, *self.constraints])


@dataclass(frozen=True)
class Action:
    """One agent action: a tool call (name + arguments) or a plain-text act (a reply)."""

    text: str
    """The action as the agent issued it; always present, never cut. Where a source records
    several tool calls made at once in one step, every call is listed (docs/sources.md)."""
    tool: str | None = None
    """Tool name when the action is a tool call."""
    arguments: Mapping[str, Any] | None = None
    """Tool arguments when they are structured."""


@dataclass(frozen=True)
class Turn:
    """One turn of a trajectory."""

    role: Role
    """user, agent, or environment (an environment message that answers no agent action)."""
    content: str | None = None
    """Text of a user or environment turn."""
    thought: str | None = None
    """An agent step's reasoning before acting."""
    action: Action | None = None
    """An agent step's action; None only for a documented exclusion (a null upstream action)."""
    observation: str | None = None
    """What came back after an agent step's action executed."""

    @property
    def is_action(self) -> bool:
        """True for an agent step with an action: each such turn is one decision point."""
        return self.role == "agent" and self.action is not None


@dataclass(frozen=True)
class Trajectory:
    """One agent run, in canonical form."""

    id: str
    """Stable id: ``<source>:<source_id>``."""
    source: str
    """Adapter name (rjudge, stepshield, assebench, sample)."""
    source_id: str
    """The record's id upstream (or the sample file's id)."""
    category: str
    """Application category (R-Judge's folder, StepShield's rogue family, ...)."""
    scenario: str
    """Finer scenario name where the source has one, else ''."""
    license: str
    """SPDX-like licence id of the source; 'none' means it may not be redistributed."""
    policy: Policy
    """The policy the agent works under."""
    turns: tuple[Turn, ...]
    """Ordered turns."""
    label: TrajectoryLabel | None = None
    """Upstream trajectory-level label where the source has one."""
    group: str = ""
    """Grouping key for splits: records sharing it must land in the same split."""
    subset: str = ""
    """The part of its source it belongs to, for breakdowns: R-Judge ``injection`` or
    ``original``, StepShield ``real`` or ``synthetic`` (templated items kept out of the
    headline); '' where a source has no subsets."""
    level: str = ""
    """The source's difficulty or severity level where it has one (StepShield ``L1``-``L3``)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free metadata (source step labels, attack type, risk description kept for labelling,
    file and position). Never rendered into a judge's prompt."""

    def actions(self) -> list[tuple[int, int]]:
        """(k, turn index) for every agent action, k 1-based."""
        out: list[tuple[int, int]] = []
        for i, t in enumerate(self.turns):
            if t.is_action:
                out.append((len(out) + 1, i))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trajectory:
        """Inverse of to_dict."""
        return cls(
            id=d["id"],
            source=d["source"],
            source_id=str(d["source_id"]),
            category=d.get("category", ""),
            scenario=d.get("scenario", ""),
            license=d.get("license", ""),
            policy=_policy(d.get("policy") or {}),
            turns=tuple(_turn(t) for t in d.get("turns", ())),
            label=d.get("label"),
            group=d.get("group", ""),
            subset=d.get("subset", ""),
            level=d.get("level", ""),
            metadata=dict(d.get("metadata") or {}),
        )

    def content_hash(self) -> str:
        """Stable hash of the canonical form."""
        return content_hash(self.to_dict())


@dataclass(frozen=True)
class DecisionPoint:
    """One agent action seen before it executes: the pre-execution view."""

    id: str
    """``<source>:<source_id>:<k>``."""
    trajectory_id: str
    """The parent trajectory's id."""
    source: str
    """Adapter name."""
    k: int
    """1-based index of the action among the trajectory's agent actions."""
    policy: Policy
    """The trajectory's policy."""
    history: tuple[Turn, ...]
    """Every turn before action k, observations included."""
    thought: str | None
    """Action k's thought."""
    action: Action
    """Action k itself; its observation is never part of a decision point."""
    category: str = ""
    """Copied from the trajectory for breakdowns."""
    subset: str = ""
    """Copied from the trajectory for breakdowns (``Trajectory.subset``)."""
    level: str = ""
    """Copied from the trajectory for breakdowns (``Trajectory.level``)."""
    gold: GoldLabel | None = None
    """Filled by the labelling stage."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DecisionPoint:
        """Inverse of to_dict."""
        g = d.get("gold")
        return cls(
            id=d["id"],
            trajectory_id=d["trajectory_id"],
            source=d["source"],
            k=int(d["k"]),
            policy=_policy(d.get("policy") or {}),
            history=tuple(_turn(t) for t in d.get("history", ())),
            thought=d.get("thought"),
            action=_action(d["action"]),
            category=d.get("category", ""),
            subset=d.get("subset", ""),
            level=d.get("level", ""),
            gold=GoldLabel(**g) if g else None,
        )

    def content_hash(self) -> str:
        """Stable hash of the canonical form."""
        return content_hash(self.to_dict())


def decision_points(traj: Trajectory) -> Iterator[DecisionPoint]:
    """Cut a trajectory into its decision points.

    View k holds exactly ``turns[:i]`` (turn i being action k) with the agent turn of action k
    reduced to its thought and action: its observation, and every later turn, are left out.
    """
    for k, i in traj.actions():
        turn = traj.turns[i]
        assert turn.action is not None
        yield DecisionPoint(
            id=f"{traj.id}:{k}",
            trajectory_id=traj.id,
            source=traj.source,
            k=k,
            policy=traj.policy,
            history=traj.turns[:i],
            thought=turn.thought,
            action=turn.action,
            category=traj.category,
            subset=traj.subset,
            level=traj.level,
        )


def _plain(obj: Any) -> Any:
    """Tuples to lists, mappings to dicts, recursively (asdict leaves mappingproxy/tuples)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def _policy(d: Mapping[str, Any]) -> Policy:
    return Policy(
        system=d.get("system") or "",
        task=d.get("task") or "",
        constraints=tuple(d.get("constraints") or ()),
    )


def _action(d: Mapping[str, Any]) -> Action:
    return Action(text=d["text"], tool=d.get("tool"), arguments=d.get("arguments"))


def _turn(d: Mapping[str, Any]) -> Turn:
    a = d.get("action")
    return Turn(
        role=d["role"],
        content=d.get("content"),
        thought=d.get("thought"),
        action=_action(a) if a else None,
        observation=d.get("observation"),
    )


def view_text(dp: DecisionPoint) -> str:
    """Every character a judge may be shown for ``dp`` (policy, history, thought, action), used
    by leak checks."""
    return canonical_json(
        [dp.policy.text(), [_plain(asdict(t)) for t in dp.history], dp.thought, dp.action.text]
    )
