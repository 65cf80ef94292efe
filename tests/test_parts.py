"""The JSON documents cut into part files (bench/report/parts.py), the table set written
atomically with leaderboard.json last and its sha256 manifest, and --check over both."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench import leaderboard as L
from bench.core.errors import StorageError
from bench.report import check, parts, plots, tables

FIX = Path(__file__).parent / "fixtures" / "leaderboard"


def run(out: Path, *extra: str) -> int:
    return L.main(
        [
            "--ground-truth", str(FIX / "ground_truth.jsonl"),
            "--predictions", str(FIX / "predictions"),
            "--judges", str(FIX / "judges.toml"),
            "--out", str(out), "--quiet", *extra,
        ]
    )  # fmt: skip


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("parts")
    assert run(out) == 0
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def load(folder: Path, name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / name).read_text(encoding="utf-8"))
    return doc


def test_registry_names_files_once_and_output_texts_list_them() -> None:
    assert len(set(parts.PART_FILES)) == len(parts.PARTS)
    assert set(parts.PART_FILES) <= set(tables.OUTPUT_TEXTS)
    with pytest.raises(ValueError, match="share a file"):
        parts._check_registry([*parts.PARTS, parts.PARTS[0]])


def test_split_and_merge_give_back_the_document() -> None:
    doc = {
        "schema": "s",
        "judges": [{"id": "a", "metrics": 1, "curves": [1, 2]}, {"id": "b", "metrics": 2}],
        "by_category": {"x": {"n": 1}},
        "boards": {"all": {"r": 1}, "category:x": {"r": 2}, "source:y": {"r": 3}},
    }
    reg = (
        parts.Part("leaderboard.json", "by_category", "parts/by_category.json"),
        parts.Part("leaderboard.json", "judges", "parts/curves.json", "field", "curves"),
        parts.Part("leaderboard.json", "boards", "parts/rows_category.json", "boards", "category"),
        parts.Part("leaderboard.json", "missing", "parts/missing.json"),
    )
    head, files = parts.split(doc, "leaderboard.json", reg)
    assert "by_category" not in head and head["judges"][0] == {"id": "a", "metrics": 1}
    assert head["boards"] == {"all": {"r": 1}, "source:y": {"r": 3}}
    assert head["board_index"] == {"category:x": "parts/rows_category.json"}
    assert "parts/missing.json" not in files  # a key the document lacks makes no file
    assert files["parts/curves.json"] == {"judges": [{"id": "a", "curves": [1, 2]}]}
    assert parts.merge(head, files) == doc
    assert doc["judges"][0]["curves"] == [1, 2]  # split changed nothing in place


def test_moved_content_is_the_report_json_and_the_head_keeps_its_bytes(rendered: Path) -> None:
    head = load(rendered, "leaderboard.json")
    assert head["parts"]["by_category"] == "parts/by_category.json"
    assert "by_category" not in head and "judges" in head and "definitions" in head
    assert list(head)[-1] == tables.MANIFEST_KEY  # the manifest is the last key
    whole = parts.merge(head, {p: load(rendered, p) for p in set(head["parts"].values())})
    for key, rel in head["parts"].items():
        if "." not in key:  # a whole key: its file holds exactly that JSON
            assert load(rendered, rel) == {key: whole[key]}
    rows = load(rendered, "leaderboard_rows.json")
    assert set(rows["boards"]) == {"all", "lite"}
    assert {rows["board_index"][k] for k in rows["board_index"]} <= set(parts.PART_FILES)
    # the part files' text is the document's JSON as tables._json prints it
    by_cat = (rendered / "parts" / "by_category.json").read_text(encoding="utf-8")
    assert by_cat == tables._json({"by_category": whole["by_category"]})


def test_manifest_names_every_other_output_with_its_sha256(rendered: Path) -> None:
    files = load(rendered, "leaderboard.json")["files"]
    on_disk = {k for k in snapshot(rendered) if k != "leaderboard.json"}
    assert set(files) == on_disk  # every output, the plots and part files included
    for rel, digest in files.items():
        assert hashlib.sha256((rendered / rel).read_bytes()).hexdigest() == digest
    assert check.manifest_problems(rendered) == []
    assert not [p for p in rendered.iterdir() if p.name.startswith(tables.STAGING)]


def test_a_failure_mid_render_leaves_the_previous_set_whole(
    rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    shutil.copytree(rendered, out)
    before = snapshot(out)
    real = plots.write_all

    def tables_then_one_plot_then_fail(report: Any, folder: Path, *a: Any) -> list[Path]:
        real(report, folder, *a)  # the texts and every plot are in the staging folder by now
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plots, "write_all", tables_then_one_plot_then_fail)
    with pytest.raises(StorageError, match="no space left on device; the tables already in"):
        run(out, "--metric", "auroc")  # another ranking: every table would change
    assert snapshot(out) == before  # nothing moved into place, nothing half-written
    assert check.manifest_problems(out) == []
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in rendered.iterdir())

    def fail_in_render(report: Any) -> str:
        raise RuntimeError("render failed")

    monkeypatch.setattr(plots, "write_all", real)
    monkeypatch.setattr(tables, "render_robustness_csv", fail_in_render)
    with pytest.raises(RuntimeError, match="render failed"):
        run(out, "--metric", "auroc")
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(tables.STAGING)]


def test_moves_stopped_halfway_are_visible_to_a_reader(
    rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renames can still stop between two files (a kill): leaderboard.json, moved last, is then
    the previous one, and its manifest tells the reader the set is mixed."""
    out = tmp_path / "out"
    shutil.copytree(rendered, out)
    real, moves = os.replace, []

    def replace_three(src: Any, dst: Any) -> None:
        if tables.STAGING in str(src):
            if len(moves) == 3:
                raise KeyboardInterrupt
            moves.append(dst)
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace_three)
    with pytest.raises(KeyboardInterrupt):
        run(out, "--metric", "auroc")
    monkeypatch.setattr(os, "replace", real)
    assert load(out, "leaderboard.json") == load(rendered, "leaderboard.json")
    assert len(check.manifest_problems(out)) >= 1  # the moved files are not the named ones
    assert not [p for p in out.iterdir() if p.name.startswith(tables.STAGING)]
    assert run(out, "--metric", "auroc") == 0 and check.manifest_problems(out) == []


def _bump_last_digit(text: str) -> str:
    """The first 4-decimal number in ``text`` moved by one unit of its last digit."""
    import re

    m = re.search(r"(?<![\d.])0\.(\d{4})(?!\d)", text)
    assert m, "no 4-decimal number to change"
    digits = int(m.group(1))
    new = f"0.{(digits + 1 if digits < 9999 else digits - 1):04d}"
    return text[: m.start()] + new + text[m.end() :]


def test_check_tolerates_a_last_digit_in_a_part_when_the_manifest_holds(
    rendered: Path, tmp_path: Path
) -> None:
    """Another CPU: a part file one unit apart, its digest in leaderboard.json changed with
    it. The check compares the files within the tolerance and the committed manifest against
    the committed bytes, so it passes; a manifest that does not match its files fails."""
    out = tmp_path / "out"
    shutil.copytree(rendered, out)
    part = out / "parts" / "by_category.json"
    part.write_text(_bump_last_digit(part.read_text(encoding="utf-8")), encoding="utf-8")
    head = load(out, "leaderboard.json")
    head["files"]["parts/by_category.json"] = hashlib.sha256(part.read_bytes()).hexdigest()
    (out / "leaderboard.json").write_text(tables._json(head), encoding="utf-8")
    diffs, worst = check.compare(rendered, out)
    assert diffs == [] and worst.largest > 0
    assert run(out, "--check") == 0
    # the manifest naming the other bytes (the file of another run): not one generation
    shutil.copy(rendered / "leaderboard.json", out / "leaderboard.json")
    diffs, _ = check.compare(rendered, out)
    assert any("sha256 differs" in d for d in diffs), diffs


def test_check_sees_a_missing_part_and_a_stale_manifest_path(
    rendered: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(rendered, out)
    (out / "parts" / "twins.json").unlink()
    diffs, _ = check.compare(rendered, out)
    assert any("twins.json is missing" in d for d in diffs)
    shutil.copy(rendered / "parts" / "twins.json", out / "parts" / "twins.json")
    head = load(out, "leaderboard.json")
    head["files"]["parts/nowhere.json"] = "0" * 64
    (out / "leaderboard.json").write_text(tables._json(head), encoding="utf-8")
    diffs, _ = check.compare(rendered, out)
    assert diffs and "differs" in diffs[0]  # the manifest names a file the inputs do not give
