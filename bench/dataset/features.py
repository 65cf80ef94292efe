"""The parquet side of a version: the explicit ``datasets.Features`` and one record as a row.

The column order of ``hf_row`` is the parquet column order, part of a version's published bytes;
docs/dataset.md documents every column.
"""

from __future__ import annotations

from typing import Any

from bench.core.jsonl import canonical_json
from bench.core.labels import ACTS, BINARY, PHASES, binary_of
from bench.dataset.records import Record


def features() -> Any:
    """The explicit ``datasets.Features`` of every config."""
    from datasets import ClassLabel, Features, List, Value

    s = Value("string")
    turn = {
        "role": s,
        "content": s,
        "thought": s,
        "action": s,
        "tool": s,
        "arguments": s,
        "observation": s,
    }
    return Features(
        {
            "id": s,
            "trajectory_id": s,
            "source": s,
            "category": s,
            "scenario": s,
            "subset": s,
            "level": s,
            "license": s,
            "k": Value("int32"),
            "policy_system": s,
            "policy_task": s,
            "policy_constraints": List(s),
            "history": List(turn),
            "thought": s,
            "action": s,
            "action_tool": s,
            "action_arguments": s,
            "messages": List({"role": s, "content": s}),
            "prompt_elided_turns": Value("int32"),
            "prompt_over_budget": Value("bool"),
            "act": ClassLabel(names=list(ACTS)),
            "binary": ClassLabel(names=list(BINARY)),
            "phase": ClassLabel(names=list(PHASES)),
            "onset": Value("int32"),
            "fail": s,
            "harm": s,
            "src": s,
            "cite": Value("int32"),
            "scored": Value("bool"),
            "provenance": s,
            "reviewed": Value("bool"),
            "disputed": Value("bool"),
            "lite": Value("bool"),
            "trajectory_label": ClassLabel(names=["safe", "unsafe"]),
            "upstream_label": s,
        }
    )


def _args_json(a: Any) -> str | None:
    return None if a is None else canonical_json(a)


def hf_row(r: Record) -> dict[str, Any]:
    """One record as a row of the parquet dataset. The key order is the parquet column order,
    part of a version's published bytes: the label columns are spelt out here rather than shared
    with ``ground_truth_row`` (whose file is written with sorted keys)."""
    p, g = r.point, r.point.gold
    assert g is not None
    return {
        "id": p.id,
        "trajectory_id": p.trajectory_id,
        "source": p.source,
        "category": p.category,
        "scenario": r.scenario,
        "subset": p.subset,
        "level": p.level,
        "license": r.license,
        "k": p.k,
        "policy_system": p.policy.system,
        "policy_task": p.policy.task,
        "policy_constraints": list(p.policy.constraints),
        "history": [
            {
                "role": t.role,
                "content": t.content,
                "thought": t.thought,
                "action": t.action.text if t.action else None,
                "tool": t.action.tool if t.action else None,
                "arguments": _args_json(t.action.arguments) if t.action else None,
                "observation": t.observation,
            }
            for t in p.history
        ],
        "thought": p.thought,
        "action": p.action.text,
        "action_tool": p.action.tool,
        "action_arguments": _args_json(p.action.arguments),
        "messages": [dict(m) for m in r.messages],
        "prompt_elided_turns": r.elided,
        "prompt_over_budget": r.over_budget,
        "act": g.act,
        "binary": binary_of(g.act),
        "phase": g.phase,
        "onset": g.onset,
        "fail": g.fail,
        "harm": g.harm,
        "src": g.src,
        "cite": g.cite,
        "scored": g.scored,
        "provenance": g.provenance,
        "reviewed": g.reviewed,
        "disputed": r.disputed,
        "lite": r.lite,
        "trajectory_label": r.trajectory_label,
        "upstream_label": r.upstream_label,
    }
