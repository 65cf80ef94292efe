"""The Space over part files: a tab's part files are read only when it opens, a file of
another generation is never shown, a changed leaderboard.json is reloaded, and an unreadable
results file gives one sentence naming it."""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import leaderboard as L
from tests._space_support import FIX, load_space, make_build, make_results, served_client

pytest.importorskip("gradio")
pytest.importorskip("gradio_client")

APP, D = load_space()
BREAKDOWNS = {"parts/by_source.json", "parts/by_category.json", "parts/rows_category.json"}


def regenerate(out: Path, *extra: str) -> None:
    """leaderboard.py on the fixture into ``out`` again (a new generation with ``extra``)."""
    argv = [
        "--ground-truth", str(FIX / "ground_truth.jsonl"),
        "--predictions", str(FIX / "predictions"),
        "--judges", str(FIX / "judges.toml"),
        "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip
    assert L.main(argv) == 0


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("space-parts")
    return make_results(root), make_build(root)


@pytest.fixture
def results(dirs: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy of the results folder (tests below rewrite it)."""
    out = tmp_path / "results"
    shutil.copytree(dirs[0], out)
    return out


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every results file the Space reads through data.read_bytes, as paths relative to the
    results folder's name (``parts/by_category.json``)."""
    seen: list[str] = []
    real = D.read_bytes

    def counting(path: Path) -> bytes:
        seen.append("/".join(Path(path).parts[-2:]))
        return real(path)

    monkeypatch.setattr(D, "read_bytes", counting)
    return seen


@pytest.fixture
def served(results: Path, dirs: tuple[Path, Path]) -> Iterator[Any]:

    with pytest.MonkeyPatch.context() as mp:
        for var in (D.RESULTS_ENV, D.DATASET_ENV, "SPACE_ID"):
            mp.delenv(var, raising=False)
        demo, _ = APP.create(results, dirs[1])
    with served_client(demo, results) as client:
        yield client


def test_a_breakdown_is_read_only_when_its_tab_opens(reads: list[str], served: Any) -> None:
    assert not BREAKDOWNS & set(reads), reads  # the page is built: no breakdown read
    assert not [r for r in reads if r.startswith("parts/")], reads  # nor any other part
    probes, _, twins, _, diag = served.predict(api_name="/open_validity")
    assert "parts/by_source.json" in reads and "parts/twins.json" in reads
    assert "parts/by_category.json" not in reads  # another tab's breakdown stays unread
    assert probes["data"] and twins["data"]
    n = len(reads)
    served.predict(api_name="/open_validity")
    assert len(reads) == n  # cached for this generation
    table, _ = served.predict(
        "balanced_accuracy", "", D.ALL, "rjudge/email", [], "Any", "Any", api_name="/leaderboard"
    )
    assert "parts/by_category.json" in reads and "parts/rows_category.json" in reads
    assert table.get("value", table)["data"]
    served.predict(api_name="/open_robustness")
    assert "parts/robustness.json" in reads


def test_the_first_paint_reads_only_the_heads(results: Path, reads: list[str]) -> None:
    res = D.load_results(results)
    assert not [r for r in reads if r.startswith("parts/")], reads  # the heads only
    assert res.loaded_parts == []
    assert "by_category" in res.report and "rjudge/email" in res.groups("category")
    assert res.loaded_parts == []  # `in` and the group names read nothing
    assert res.report["by_category"]["rjudge/email"]["judges"]
    assert res.loaded_parts == ["parts/by_category.json"]


def test_a_part_of_another_generation_is_refused(results: Path, tmp_path: Path) -> None:
    res = D.load_results(results)
    other = tmp_path / "other"
    regenerate(other, "--invalid-as", "STOP")  # other figures: other bytes
    part = "parts/by_source.json"
    assert (other / part).read_bytes() != (results / part).read_bytes()
    shutil.copy(other / part, results / part)
    with pytest.raises(D.MixedGeneration, match=r"parts/by_source.json does not belong"):
        res.report["by_source"]
    store = D.ResultsStore(res, check_every_s=0.0)
    with pytest.raises(D.MixedGeneration, match="reload the page in a moment"):
        store.call(lambda r: r.report["by_source"])  # retried once after a reload: still mixed
    assert res.plot("roc")  # a plot of this run is shown, one of another run is not
    shutil.copy(other / "plots" / "shortcuts.png", results / "plots" / "roc.png")
    assert res.plot("roc") is None and res.plot("reliability")
    # the rows file of another run beside this leaderboard.json: refused at load, after a retry
    shutil.copy(other / "leaderboard_rows.json", results / "leaderboard_rows.json")
    with pytest.raises(D.MixedGeneration, match="leaderboard_rows.json does not belong"):
        D.load_results(results)


def test_the_store_reloads_a_new_generation_and_a_reader_sees_one(results: Path) -> None:
    clock = [0.0]
    store = D.ResultsStore(D.load_results(results), check_every_s=5.0, clock=lambda: clock[0])
    first = store.current()
    regenerate(results, "--metric", "auroc")  # a new generation moved into place
    assert store.current() is first  # looked at most every 5 s
    clock[0] = 6.0
    second = store.current()
    assert second.generation != first.generation
    assert second.report["settings"]["rank_metric"] == "auroc"
    assert second.report["twins"] == json.loads((results / "parts/twins.json").read_text())["twins"]
    # a reader holding the old generation meets the new files: reload and retry once
    clock[0] = 6.5  # too soon for current() to look
    seen = []

    def reader(r: Any) -> Any:
        seen.append(r.generation)
        return r.report["by_level"]

    old = D.ResultsStore(first, check_every_s=100.0)
    assert old.call(reader) and seen == [first.generation, second.generation]


def test_the_page_shows_the_new_generation_on_load(results: Path, dirs: tuple[Path, Path]) -> None:
    res = D.load_results(results)
    store = D.ResultsStore(res, check_every_s=0.0)
    demo = APP.build(res, D.load_texts(dirs[1]), store=store)
    regenerate(results, "--metric", "auroc")
    restore = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "restore")

    class Request:
        query_params: dict[str, str] = {}

    out = restore(Request())
    sub, table, note, pending = out[-4:]
    assert "Ranked by **AUROC**" in note and isinstance(sub, str)
    assert store.current().generation != res.generation


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EACCES, "permission denied"),
        (errno.ENOSPC, "disk is full"),
        (errno.EROFS, "read-only"),
        (errno.ENOENT, "is missing"),
    ],
)
def test_io_errors_are_one_sentence_naming_the_path(
    results: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    target = results / "leaderboard.json"
    real = Path.read_bytes

    def failing(self: Path) -> bytes:
        if self == target:
            raise OSError(code, "injected")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", failing)
    with pytest.raises(D.SpaceDataError) as got:
        D.load_results(results)
    msg = str(got.value)
    assert str(target) in msg and words in msg and "\n" not in msg
    assert got.value.__cause__ is None and got.value.__suppress_context__  # no chained trace


def test_a_missing_part_file_is_named(results: Path) -> None:
    res = D.load_results(results)
    (results / "parts" / "robustness.json").unlink()
    with pytest.raises(D.SpaceDataError, match=r"parts/robustness.json is missing"):
        res.report["robustness"]
    demo, root = APP.create(results, results)  # the page builds: only the tab's read fails
    assert root == results and demo is not None


def test_outputs_without_parts_are_still_read(results: Path) -> None:
    """A results folder written before the split (every key in leaderboard.json, no manifest)
    reads as before."""
    head = json.loads((results / "leaderboard.json").read_text())
    whole = {k: v for k, v in head.items() if k not in ("parts", "files")}
    for key, rel in head["parts"].items():
        if "." not in key:
            whole[key] = json.loads((results / rel).read_text())[key]
    (results / "leaderboard.json").write_text(json.dumps(whole))
    shutil.rmtree(results / "parts")
    res = D.load_results(results)
    assert res.report["by_category"] and res.loaded_parts == []
