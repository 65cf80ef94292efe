"""bench/extract.py end to end on fixture folders written in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import extract
from bench.core.jsonl import read_jsonl, sha256_file
from bench.core.schema import DecisionPoint, Trajectory
from bench.core.script import run
from bench.sources.adapters.assebench import DATA_FILE


def _rjudge_rec(rid: int, label: int = 1) -> dict[str, Any]:
    return {
        "id": rid,
        "scenario": "",
        "profile": "You water plants.",
        "goal": "judge this",
        "contents": [
            [
                {"role": "user", "content": "Water the fern."},
                {"role": "agent", "thought": "ok", "action": "Water{'plant': 'fern'}"},
                {"role": "environment", "content": "watered"},
                {"role": "agent", "thought": "done", "action": None},
            ]
        ],
        "label": label,
        "risk_description": "",
        "attack_type": "unintended",
    }


def _raw_root(tmp_path: Path, *, broken: bool = False) -> Path:
    root = tmp_path / "raw"
    f = root / "r-judge" / "data" / "IoT" / "garden.json"
    f.parent.mkdir(parents=True)
    recs: list[Any] = [_rjudge_rec(1), _rjudge_rec(2, label=0)]
    if broken:
        recs.append({"id": 3})
    f.write_text(json.dumps(recs), encoding="utf-8")
    a = root / "assebench" / DATA_FILE
    a.parent.mkdir(parents=True)
    turns = [
        {"role": "user", "content": "Trim the hedge."},
        {"role": "agent", "thought": "", "action": "trim{'side': 'north'}"},
        {"role": "environment", "content": "trimmed"},
    ]
    rec = {
        "id": 9,
        "profile": "",
        "contents": [turns],
        "label": 0,
        "application_scenario": "Task Automation",
        "risk_type": "Other",
        "failure_mode": "",
        "ambiguous": 0,
        "risk_description": "",
    }
    a.write_text(json.dumps([rec]), encoding="utf-8")
    return root


def test_writes_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = _raw_root(tmp_path)
    out = tmp_path / "out"
    assert (
        extract.main(
            ["--source", "rjudge", "--path", str(raw / "r-judge"), "--out", str(out), "--quiet"]
        )
        == 0
    )
    d = out / "rjudge"
    assert {p.name for p in d.iterdir()} == {
        "trajectories.jsonl",
        "decision_points.jsonl",
        "rejects.jsonl",
        "exclusions.jsonl",
        "withheld.jsonl",
        "summary.json",
    }
    trajs = [Trajectory.from_dict(r) for r in read_jsonl(d / "trajectories.jsonl")]
    dps = [DecisionPoint.from_dict(r) for r in read_jsonl(d / "decision_points.jsonl")]
    assert [t.id for t in trajs] == ["rjudge:1", "rjudge:2"]
    assert [dp.id for dp in dps] == ["rjudge:1:1", "rjudge:2:1"]
    excl = list(read_jsonl(d / "exclusions.jsonl"))
    assert [(e["trajectory_id"], e["turn"]) for e in excl] == [("rjudge:1", 1), ("rjudge:2", 1)]
    s = json.loads((d / "summary.json").read_text())
    assert s["trajectories"] == 2 and s["decision_points"] == 2 and s["exclusions"] == 2
    assert s["agent_actions"] == 4 and s["safe"] == 1 and s["unsafe"] == 1 and s["rejects"] == 0
    assert s["trajectories_sha256"] == sha256_file(d / "trajectories.jsonl")
    printed = capsys.readouterr().out
    assert "rjudge: 2 trajectories, 2 decision points" in printed and "0 rejects" in printed


def test_several_sources_from_one_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = _raw_root(tmp_path)
    out = tmp_path / "out"
    argv = [
        "--source",
        "rjudge",
        "--source",
        "assebench",
        "--path",
        str(raw),
        "--out",
        str(out),
        "--quiet",
    ]
    assert extract.main(argv) == 0
    assert json.loads((out / "assebench" / "summary.json").read_text())["decision_points"] == 1
    assert "assebench: 1 trajectories" in capsys.readouterr().out


def test_rejects_are_counted_and_strict_fails(tmp_path: Path) -> None:
    raw = _raw_root(tmp_path, broken=True)
    out = tmp_path / "out"
    base = ["--source", "rjudge", "--path", str(raw / "r-judge"), "--out", str(out), "--quiet"]
    assert extract.main(base) == 0
    rej = list(read_jsonl(out / "rjudge" / "rejects.jsonl"))
    assert len(rej) == 1 and rej[0]["position"] == 2 and rej[0]["file"] == "data/IoT/garden.json"
    assert rej[0]["reason"] and rej[0]["source_id"] == "3"
    assert json.loads((out / "rjudge" / "summary.json").read_text())["rejects"] == 1
    assert extract.main([*base, "--strict"]) == 1


def test_unknown_source_and_missing_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(extract.main, ["--source", "rjudg", "--out", str(tmp_path)]) == 2
    assert "did you mean 'rjudge'" in capsys.readouterr().err
    missing = str(tmp_path / "nowhere")
    assert (
        run(extract.main, ["--source", "stepshield", "--path", missing, "--out", str(tmp_path)])
        == 2
    )
    assert "does not exist" in capsys.readouterr().err


def test_sample_through_the_registry(tmp_path: Path, repo_root: Path) -> None:
    out = tmp_path / "out"
    assert extract.main(["--source", "sample", "--out", str(out), "--quiet"]) == 0
    s = json.loads((out / "sample" / "summary.json").read_text())
    assert s["trajectories"] > 0 and s["upstream_commit"] is None


def test_real_rjudge_end_to_end(tmp_path: Path, raw_root: Path) -> None:
    if not (raw_root / "r-judge").is_dir():
        pytest.skip("r-judge not present")
    out = tmp_path / "out"
    assert (
        extract.main(["--source", "rjudge", "--path", str(raw_root), "--out", str(out), "--quiet"])
        == 0
    )
    s = json.loads((out / "rjudge" / "summary.json").read_text())
    assert (s["trajectories"], s["decision_points"], s["exclusions"], s["rejects"]) == (
        571,
        1459,
        2,
        0,
    )
