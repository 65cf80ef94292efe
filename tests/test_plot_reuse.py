"""Plots: drawn only when their inputs or the plotting code changed (else the earlier PNG's bytes
are reused), capped at plots.MAX_JUDGES judges, and --check still sees a stale plot."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench import leaderboard as L
from bench.report import plots
from bench.report.parts import read_whole

FIX = Path(__file__).parent / "fixtures" / "leaderboard"
NAMES = list(plots.PLOTS)


def args(pred: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--ground-truth", str(FIX / "ground_truth.jsonl"), "--predictions", str(pred),
        "--judges", str(FIX / "judges.toml"), "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("lb")
    assert L.main(args(FIX / "predictions", out)) == 0
    return read_whole(out)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the plots actually drawn (each drawer wrapped to log its call)."""
    calls: list[str] = []

    def counting(name: str, draw: Callable[..., Path]) -> Callable[..., Path]:
        def wrapped(*a: Any) -> Path:
            calls.append(name)
            return draw(*a)

        return wrapped

    for name, draw in list(plots.PLOTS.items()):
        monkeypatch.setitem(plots.PLOTS, name, counting(name, draw))
    return calls


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}


def test_second_render_reuses_the_bytes(
    report: dict[str, Any], tmp_path: Path, drawn: list[str]
) -> None:
    rec = tmp_path / "record"
    plots.write_all(report, tmp_path / "a", [], rec)
    assert drawn == NAMES
    drawn.clear()
    plots.write_all(report, tmp_path / "b", [tmp_path / "a"], rec)
    assert drawn == []
    assert files(tmp_path / "b") == files(tmp_path / "a")
    # without a record nothing is reused, and drawing gives those very bytes
    plots.write_all(report, tmp_path / "c", [tmp_path / "a"], None)
    assert drawn == NAMES
    assert files(tmp_path / "c") == files(tmp_path / "a")


def test_a_changed_datum_label_or_code_draws_again(
    report: dict[str, Any], tmp_path: Path, drawn: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = tmp_path / "record"
    plots.write_all(report, tmp_path / "a", [], rec)
    changed = copy.deepcopy(report)
    changed["judges"][0]["metrics"]["auroc"]["value"] = 0.123
    drawn.clear()
    plots.write_all(changed, tmp_path / "b", [tmp_path / "a"], rec)
    assert "roc.png" in drawn  # the legend prints the AUROC
    assert files(tmp_path / "b")["roc.png"] != files(tmp_path / "a")["roc.png"]
    renamed = copy.deepcopy(report)
    renamed["judges"][0]["display_name"] = "Renamed judge"  # not in the data digest
    drawn.clear()
    plots.write_all(renamed, tmp_path / "c", [tmp_path / "a"], rec)
    assert drawn == NAMES
    monkeypatch.setattr(plots, "code_fingerprint", lambda: "other plotting code")
    drawn.clear()
    plots.write_all(report, tmp_path / "d", [tmp_path / "a"], rec)
    assert drawn == NAMES


def test_only_the_recorded_bytes_are_reused(
    report: dict[str, Any], tmp_path: Path, drawn: list[str]
) -> None:
    rec = tmp_path / "record"
    plots.write_all(report, tmp_path / "a", [], rec)
    good = files(tmp_path / "a")
    prev = tmp_path / "prev"
    prev.mkdir()
    # the right data digest in other bytes (a PNG drawn by other code or another matplotlib)
    (prev / "roc.png").write_bytes(good["roc.png"] + b"\0")
    shutil.copy(tmp_path / "a" / "roc.png", prev / "reliability.png")  # another plot's bytes
    drawn.clear()
    plots.write_all(report, tmp_path / "b", [prev], rec)
    assert drawn == NAMES
    assert files(tmp_path / "b") == good


def many_judges(report: dict[str, Any], n: int) -> dict[str, Any]:
    """The report with its first judge copied to ``n`` ranked judges (ids j00, j01, ...)."""
    big = copy.deepcopy(report)
    first = report["judges"][0]
    big["judges"] = []
    for i in range(n):
        e = copy.deepcopy(first)
        e["id"], e["display_name"], e["rank"] = f"j{i:02d}", f"judge {i:02d}", i + 1
        big["judges"].append(e)
        for g in big["by_source"].values():
            g["judges"][e["id"]] = g["judges"][first["id"]]
        pb = big.get("pairs") or {}
        if first["id"] in (pb.get("judges") or {}):
            pb["judges"][e["id"]] = pb["judges"][first["id"]]
    return big


def test_plots_show_at_most_max_judges_and_say_so(report: dict[str, Any], tmp_path: Path) -> None:
    n = plots.MAX_JUDGES + 3
    view = plots.plot_view(many_judges(report, n))
    assert [e["id"] for e in view["judges"]] == [f"j{i:02d}" for i in range(plots.MAX_JUDGES)]
    assert view["shown"] == f" (top {plots.MAX_JUDGES} of {n} judges)"
    assert all(len(g["judges"]) == plots.MAX_JUDGES for g in view["by_source"].values())
    assert plots.plot_view(many_judges(report, plots.MAX_JUDGES))["shown"] == ""
    assert plots.plot_view(report)["judges"] == report["judges"]
    written = plots.write_all(many_judges(report, n), tmp_path / "p", [], None)
    for p in written:
        data = plots.data_of(p)
        ids = list(data["judges"]) if isinstance(data, dict) else [row[0] for row in data]
        if p.name == "shortcuts.png":  # one panel per source, each with every judge shown
            ids = [j for j, _ in data[0][2]]
        assert len(ids) <= plots.MAX_JUDGES, p.name
    assert len(plots.data_of(tmp_path / "p" / "roc.png")) == plots.MAX_JUDGES


def test_check_sees_a_stale_plot_although_its_bytes_were_recorded(tmp_path: Path) -> None:
    """The committed plots are reused by --check only where they are what the inputs draw: plots
    of the previous predictions (a generation the record knows) are stale."""
    pred = tmp_path / "predictions"
    shutil.copytree(FIX / "predictions", pred)
    out = tmp_path / "out"
    assert L.main(args(pred, out)) == 0
    old = tmp_path / "old_plots"
    shutil.copytree(out / "plots", old)
    f = pred / "gamma" / "fixture-1" / "c0ffee.jsonl"
    f.write_text(f.read_text().replace('"risk": 90', '"risk": 40'))
    assert L.main(args(pred, out)) == 0
    stale = [n for n, b in files(old).items() if files(out / "plots")[n] != b]
    assert stale == ["reliability.png"]  # the risk is binned there; the ROC's order is the same
    assert L.main(args(pred, out, "--check")) == 0
    shutil.copy(old / "reliability.png", out / "plots" / "reliability.png")
    assert L.main(args(pred, out, "--check")) == 1
    # regenerating redraws it from the new data, whatever stale file sat in the folder
    assert L.main(args(pred, out)) == 0
    assert L.main(args(pred, out, "--check")) == 0
