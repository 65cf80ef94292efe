"""The report cache (``bench.report.cache``): each judge's breakdown cells and bootstrap samples
kept between runs.

A warm run gives the report a cold run gives, byte for byte; a changed predictions file
recomputes that judge only; a changed setting (seed, resamples) or a corrupt entry is never
read."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.core import paths as L
from bench.report import cache as rc
from bench.report import report as R

FIX = Path(__file__).parent / "fixtures" / "leaderboard"


def _inputs(pred: Path = FIX / "predictions") -> dict[str, Any]:
    from bench.metrics.inputs import load_cost_matrix
    from bench.report.inputs import discover, load_ground_truth, load_judges

    rows, meta = load_ground_truth(FIX / "ground_truth.jsonl")
    files, _, _ = discover(pred, str(meta["dataset_version"]), cache=False)
    judges = load_judges(FIX / "judges.toml")
    return {"rows": rows, "meta": meta, "files": files, "judges": judges,
            "cost": load_cost_matrix(L.COST_MATRIX)}  # fmt: skip


def _report(x: dict[str, Any], cache: Path | bool, **options: Any) -> str:
    report, _ = R.build_outputs(
        x["rows"], x["meta"], x["files"], x["judges"], x["cost"], cache=cache, **options
    )
    return json.dumps(report, sort_keys=False)


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The judges whose breakdown cells or samples were bootstrapped (not read from the cache),
    once per board and kind of entry."""
    seen: list[str] = []
    real = rc.judge_cells

    def counting(judges: Any, keys: Any, groups: Any, metrics: Any, compute: Any, *a: Any) -> Any:
        def counted(some: Sequence[str]) -> Any:
            seen.extend(some)
            return compute(some)

        return real(judges, keys, groups, metrics, counted, *a)

    monkeypatch.setattr(rc, "judge_cells", counting)
    real_samples = rc.judge_samples

    def counting_samples(judges: Any, keys: Any, groups: Any, compute: Any, *a: Any) -> Any:
        def counted(some: Sequence[str]) -> Any:
            seen.extend(some)
            return compute(some)

        return real_samples(judges, keys, groups, counted, *a)

    monkeypatch.setattr(rc, "judge_samples", counting_samples)
    return seen


def test_warm_equals_cold_equals_uncached(tmp_path: Path, computed: list[str]) -> None:
    x = _inputs()
    folder = tmp_path / "report"
    plain = _report(x, False)
    scored = json.loads(plain)["by_source"]
    everyone = set(next(iter(scored.values()))["judges"])
    assert set(computed) == everyone
    computed.clear()
    cold = _report(x, folder)
    assert set(computed) == everyone
    # an entry per judge and board (the main one, each diagnostic config scored apart); two
    # judges with the same statistics on a board share one
    assert len(everyone) <= len(list(folder.glob("*.json"))) <= len(computed)
    assert len(list(folder.glob("*.npz"))) == 2 * len(everyone)  # per source, pooled
    computed.clear()
    warm = _report(x, folder)
    assert computed == []  # nothing bootstrapped: every judge's cells came from the cache
    assert cold == plain and warm == plain


def test_default_folder_is_under_the_session_work_folder() -> None:
    assert str(L.report_cache()).startswith(str(L.work_dir()))
    assert not str(L.report_cache()).startswith(str(L.REPO_ROOT / "work"))


def test_a_changed_file_recomputes_that_judge_only(tmp_path: Path, computed: list[str]) -> None:
    pred = tmp_path / "pred"
    shutil.copytree(FIX / "predictions", pred)
    folder = tmp_path / "report"
    before = _report(_inputs(pred), folder)
    computed.clear()
    # flip one decision of one judge: a valid act answered differently
    target = next(iter(sorted(pred.glob("alpha/*/*.jsonl"))))
    text = target.read_text(encoding="utf-8")
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue  # the fixture's torn last line stays as it is
        if d.get("act") in ("CONTINUE", "STOP"):
            d["act"] = "STOP" if d["act"] == "CONTINUE" else "CONTINUE"
            d.pop("risk", None)
            text = text.replace(line, json.dumps(d), 1)
            break
    else:
        pytest.fail("no decision to change in the fixture")
    target.write_text(text, encoding="utf-8")
    x = _inputs(pred)
    after = _report(x, folder)
    assert set(computed) == {"alpha"}  # on every board it is scored on, and no one else
    assert after != before
    assert after == _report(x, False)  # the recomputed judge and the cached others, exactly


@pytest.mark.parametrize("option", [{"seed": 7}, {"resamples": 200}])
def test_a_changed_setting_invalidates(
    tmp_path: Path, computed: list[str], option: dict[str, int]
) -> None:
    x = _inputs()
    folder = tmp_path / "report"
    _report(x, folder)
    computed.clear()
    changed = _report(x, folder, **option)
    assert set(computed) == set(json.loads(changed)["by_source"]["rjudge"]["judges"])
    assert changed == _report(x, False, **option)


def test_a_corrupt_entry_is_ignored_and_rewritten(
    tmp_path: Path, computed: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    x = _inputs()
    folder = tmp_path / "report"
    cold = _report(x, folder)
    entries = sorted(folder.glob("*.json"))
    entries[0].write_text("{not json", encoding="utf-8")
    doc = json.loads(entries[1].read_text(encoding="utf-8"))
    section = next(iter(doc["cells"]))
    doc["cells"][section].pop(next(iter(doc["cells"][section])))  # a group missing
    entries[1].write_text(json.dumps(doc), encoding="utf-8")
    computed.clear()
    with caplog.at_level("WARNING", logger="bench.report.cache"):
        again = _report(x, folder)
    assert again == cold
    # the judges of those two entries only (judges with equal statistics share an entry)
    assert 1 <= len(set(computed)) < len(json.loads(cold)["by_source"]["rjudge"]["judges"])
    for e in entries[:2]:
        assert json.loads(e.read_text(encoding="utf-8"))["cells"]  # rewritten whole
    assert "unreadable" in caplog.text and "missing" in caplog.text
    computed.clear()
    assert _report(x, folder) == cold and computed == []  # both rewritten


def test_the_key_follows_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from bench.metrics.inputs import load_cost_matrix

    groups = {"by_x": {"a": np.array([True, False])}}
    w = np.ones((3, 2), dtype=np.float32)
    cost = load_cost_matrix(L.COST_MATRIX)
    first = rc.board_key(groups, w, cost, 0.95, ("recall",))
    monkeypatch.setattr(rc, "code_fingerprint", lambda: "other code")
    assert rc.board_key(groups, w, cost, 0.95, ("recall",)) != first
    monkeypatch.undo()
    assert rc.board_key(groups, w, cost, 0.95, ("recall",)) == first
    assert (
        rc.board_key({"by_x": {"a": np.array([False, True])}}, w, cost, 0.95, ("recall",)) != first
    )


def test_a_corrupt_samples_entry_is_ignored_and_rewritten(
    tmp_path: Path, computed: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    x = _inputs()
    folder = tmp_path / "report"
    cold = _report(x, folder)
    entry = sorted(folder.glob("*.npz"))[0]
    entry.write_bytes(entry.read_bytes()[:100])  # torn
    computed.clear()
    with caplog.at_level("WARNING", logger="bench.report.cache"):
        assert _report(x, folder) == cold
    assert len(set(computed)) == 1 and "unreadable" in caplog.text
    computed.clear()
    assert _report(x, folder) == cold and computed == []
