"""StepShield adapter: conversion rules on hand-written fixtures, bad input, and the real counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.core.schema import decision_points
from bench.sources import get


def _traj(tid: str, *, rogue_at: tuple[int, ...] = ()) -> dict[str, Any]:
    """A small StepShield-shaped record written for these tests."""
    fam = tid.split("-")[0]
    steps = []
    for n in range(1, 4):
        s: dict[str, Any] = {
            "step": n,
            "thought": f"thinking {n}",
            "action": "run_command" if n < 3 else "submit",
            "arguments": {"command": f"make step{n}"} if n < 3 else {},
            "observation": f"output {n}" if n != 2 else None,
            "label": None,
            "rationale": None,
        }
        if n in rogue_at:
            s.update(label=fam, rationale="own rationale", continuation=False)
        steps.append(s)
    return {
        "trajectory_id": tid,
        "task": {
            "title": "Tidy the build",
            "description": "Make the build pass.",
            "constraints": ["Do not touch tests"],
            "success_criteria": ["make exits 0"],
        },
        "steps": steps,
    }


def _write(root: Path, rec: Any, name: str | None = None) -> Path:
    tid = rec["trajectory_id"] if isinstance(rec, dict) else name
    assert tid is not None
    p = root / "data" / "train" / tid.split("-")[0] / f"{tid}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    # one pretty-printed object per file, as upstream does
    p.write_text(rec if isinstance(rec, str) else json.dumps(rec, indent=2), encoding="utf-8")
    return p


def test_conversion_rules(tmp_path: Path) -> None:
    _write(tmp_path, _traj("TST-L2-007-ROGUE", rogue_at=(2, 3)))
    _write(tmp_path, _traj("TST-L2-007-CLEAN"))
    res = get("stepshield").extract(tmp_path)
    assert not res.rejects and not res.exclusions
    rogue, clean = sorted(res.trajectories, key=lambda t: t.id, reverse=True)
    assert rogue.id == "stepshield:TST-L2-007-ROGUE" and rogue.label == "unsafe"
    assert clean.label == "safe" and clean.metadata["step_labels"] == []
    assert rogue.category == "TST" and rogue.scenario == "L2" and rogue.license == "CC-BY-4.0"
    assert rogue.group == clean.group == "TST-L2-007"
    assert rogue.policy.constraints == ("Do not touch tests",)
    assert "Tidy the build" in rogue.policy.task and "Make the build pass." in rogue.policy.task
    assert "make exits 0" in rogue.policy.task
    assert [x.role for x in rogue.turns] == ["agent"] * 3
    a1 = rogue.turns[0]
    assert a1.action is not None and a1.action.tool == "run_command"
    assert a1.action.arguments == {"command": "make step1"}
    assert a1.action.text == 'run_command(command="make step1")'
    assert rogue.turns[2].action is not None and rogue.turns[2].action.text == "submit()"
    assert a1.thought == "thinking 1" and a1.observation == "output 1"
    assert rogue.turns[1].observation is None
    labs = rogue.metadata["step_labels"]
    assert [(x["k"], x["label"], x["continuation"]) for x in labs] == [
        (2, "TST", False),
        (3, "TST", False),
    ]
    dps = list(decision_points(rogue))
    assert [d.id for d in dps] == [f"stepshield:TST-L2-007-ROGUE:{k}" for k in (1, 2, 3)]
    assert "output 1" not in json.dumps([d.to_dict() for d in dps[:1]])


def test_bad_input_becomes_rejects(tmp_path: Path) -> None:
    _write(tmp_path, _traj("SEC-L1-001-ROGUE", rogue_at=(1,)))
    _write(tmp_path, '{"trajectory_id": "SEC-L1-002-ROGUE", "steps": [', name="SEC-L1-002-ROGUE")
    no_steps = _traj("SEC-L1-003-ROGUE")
    del no_steps["steps"]
    _write(tmp_path, no_steps)
    bad_label = _traj("SEC-L1-004-ROGUE")
    bad_label["steps"][0]["label"] = "XYZ"
    _write(tmp_path, bad_label)
    bad_args = _traj("SEC-L1-005-ROGUE")
    bad_args["steps"][1]["arguments"] = "make"
    _write(tmp_path, bad_args)
    _write(tmp_path, _traj("SEC-L9-006-ROGUE"))
    labelled_clean = _traj("SEC-L1-007-CLEAN", rogue_at=(1,))
    _write(tmp_path, labelled_clean)
    res = get("stepshield").extract(tmp_path)
    assert [t.source_id for t in res.trajectories] == ["SEC-L1-001-ROGUE"]
    reasons = {Path(r.file).name: r.reason for r in res.rejects}
    assert set(reasons) == {
        "SEC-L1-002-ROGUE.jsonl",
        "SEC-L1-003-ROGUE.jsonl",
        "SEC-L1-004-ROGUE.jsonl",
        "SEC-L1-005-ROGUE.jsonl",
        "SEC-L9-006-ROGUE.jsonl",
        "SEC-L1-007-CLEAN.jsonl",
    }
    assert "not one valid JSON object" in reasons["SEC-L1-002-ROGUE.jsonl"]
    assert "steps" in reasons["SEC-L1-003-ROGUE.jsonl"]
    assert "XYZ" in reasons["SEC-L1-004-ROGUE.jsonl"]
    assert (
        "steps[1]" in reasons["SEC-L1-005-ROGUE.jsonl"]
        and "arguments" in reasons["SEC-L1-005-ROGUE.jsonl"]
    )
    assert all(r.position == 0 and r.file.startswith("data/train/SEC/") for r in res.rejects)


def test_real_stepshield(raw_root: Path) -> None:
    src = get("stepshield")
    path = raw_root / src.folder
    if not path.is_dir():
        pytest.skip("stepshield not present")
    res = src.extract(path)
    assert len(res.trajectories) == 1278 and not res.rejects and not res.exclusions
    assert sum(len(t.turns) for t in res.trajectories) == 16243
    assert sum(1 for t in res.trajectories if t.label == "unsafe") == 639
    assert sum(1 for t in res.trajectories if t.metadata["step_labels"]) == 639
    groups: dict[str, set[str]] = {}
    for t in res.trajectories:
        groups.setdefault(t.group, set()).add(t.metadata["variant"])
    assert len(groups) == 639 and all(v == {"ROGUE", "CLEAN"} for v in groups.values())
    entries = [x for t in res.trajectories for x in t.metadata["step_labels"]]
    assert len(entries) == 686
    assert {x["continuation"] for x in entries} == {False}
    assert all(
        x["label"] == t.category for t in res.trajectories for x in t.metadata["step_labels"]
    )
    synthetic = [t for t in res.trajectories if t.subset == "synthetic"]
    assert len(synthetic) == 282 and {t.level for t in synthetic} == {"L1", "L2"}
    assert {t.subset for t in res.trajectories} == {"real", "synthetic"}
    by_group: dict[str, set[str]] = {}
    for t in res.trajectories:
        by_group.setdefault(t.group, set()).add(t.subset)
    assert all(len(s) == 1 for s in by_group.values())  # both twins share the subset
    tasks = {t.metadata["links"]["task"][0] for t in res.trajectories}
    assert len(tasks) < len(by_group)  # one task text serves several pairs


def _templated(tid: str, n: int, rogue: bool, placeholder: bool = True) -> dict[str, Any]:
    rec = _traj(tid, rogue_at=(2,) if rogue else ())
    for s in rec["steps"]:
        s["thought"] = f"I will now carry out step {s['step']} of the plan."  # canned
    if placeholder:
        rec["steps"][0]["arguments"] = {"command": f"example_command_{n}"}
    return rec


def test_templated_pairs_are_synthetic_by_rule_not_by_list(tmp_path: Path) -> None:
    # 12 templated pairs share canned thoughts (24 trajectories >= CANNED_MIN_TRAJECTORIES)
    for n in range(12):
        _write(tmp_path, _templated(f"UFO-L1-{n:03d}-ROGUE", n, True))
        # the clean twin has no placeholder: it is synthetic because its twin is
        _write(tmp_path, _templated(f"UFO-L1-{n:03d}-CLEAN", n, False, placeholder=False))
    # a real pair: placeholder-looking text but its own thoughts
    real = _traj("SEC-L2-050-ROGUE", rogue_at=(2,))
    real["steps"][0]["arguments"] = {"command": "echo example_file_1"}
    _write(tmp_path, real)
    _write(tmp_path, _traj("SEC-L2-050-CLEAN"))
    res = get("stepshield").extract(tmp_path)
    subset = {t.source_id: t.subset for t in res.trajectories}
    level = {t.source_id: t.level for t in res.trajectories}
    assert subset["UFO-L1-003-ROGUE"] == subset["UFO-L1-003-CLEAN"] == "synthetic"
    assert subset["SEC-L2-050-ROGUE"] == subset["SEC-L2-050-CLEAN"] == "real"
    assert level["SEC-L2-050-ROGUE"] == "L2" and level["UFO-L1-000-CLEAN"] == "L1"
    assert sum(s == "synthetic" for s in subset.values()) == 24
