"""The Space (space/app.py) launched on 127.0.0.1 and driven through gradio_client, on the
leaderboard fixture's outputs in tmp folders; plus its readers without a server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._space_support import (
    FIX,
    INJECTION,
    free_port,
    load_space,
    make_build,
    make_pairs_build,
    make_pairs_results,
    make_results,
    served_client,
)

pytest.importorskip("gradio")
pytest.importorskip("gradio_client")

APP, D = load_space()
ALL = D.ALL


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("space")
    return make_results(root), make_build(root)


@pytest.fixture(scope="module")
def client(dirs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from gradio_client import Client

    results, build = dirs
    empty = tmp_path_factory.mktemp("no-raw-data")
    with pytest.MonkeyPatch.context() as mp:
        for var in (D.RESULTS_ENV, D.DATASET_ENV, "SPACE_ID"):
            mp.delenv(var, raising=False)
        mp.setenv("FORESIGHT_DATA", str(empty))  # no raw R-Judge here: its text is withheld
        demo, root = APP.create(results, build)
    assert root == results
    port = free_port()
    demo.launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        allowed_paths=[str(results)],
    )
    try:
        yield Client(f"http://127.0.0.1:{port}/", verbose=False, download_files=False)
    finally:
        demo.close()


def board(
    client: Any,
    metric: str = "balanced_accuracy",
    search: str = "",
    source: str = ALL,
    category: str = ALL,
    backend: list[str] | None = None,
    open_w: str = "Any",
    fitted: str = "Any",
) -> tuple[list[dict[str, str]], str]:
    table, note = client.predict(
        metric, search, source, category, backend or [], open_w, fitted, api_name="/leaderboard"
    )
    table = table.get("value", table)  # a table update carries its value and column types
    return [dict(zip(table["headers"], row, strict=True)) for row in table["data"]], note


def expected() -> dict[str, Any]:
    from bench.report.parts import read_whole

    return read_whole(FIX / "expected")  # leaderboard.json with its part files


def test_leaderboard_table_matches_json(client: Any) -> None:
    rows, note = board(client)
    rep = expected()
    judges, ref = rows[:-1], rows[-1]
    assert judges_of(judges) == [e["display_name"] for e in rep["judges"]]
    assert [int(r["Rank"]) for r in judges] == [e["rank"] for e in rep["judges"]]
    a = rep["judges"][0]["metrics"]["balanced_accuracy"]
    assert rows[0]["Bal. acc."] == round(a["value"], 3)  # a number: it sorts as one
    assert rows[0]["Bal. acc. 95% CI"] == f"[{a['ci'][0]:.3f}, {a['ci'][1]:.3f}]"
    assert rows[1]["Judge"].endswith("†")  # beta's risk comes from its acts
    assert "Bal. acc." in note and "share a rank" in note and "mean over the upstream" in note
    assert "Reward" in note and "Caught (bal.)" in note  # the columns are explained
    # the margin over the shortcuts, and the reference line itself (never ranked)
    m = rep["judges"][0]["above_shortcuts"]["balanced_accuracy"]
    assert rows[0]["vs shortcuts (Bal. acc.)"] == round(m["value"], 3)
    assert rows[0]["Shortcuts"] == m["verdict"]
    r = rep["shortcut_reference"]["balanced_accuracy"]
    assert ref["Judge"] == "Shortcut reference (best probe per source)" and ref["Rank"] is None
    assert ref["Bal. acc."] == round(r["value"], 3)


def test_only_metrics_a_constant_judge_cannot_win_rank(
    client: Any, dirs: tuple[Path, Path]
) -> None:
    rows, _ = board(client, metric="caught_balanced")
    assert list(rows[0])[4] == "Caught (bal.)"
    with pytest.raises(Exception, match="not in the list of choices"):
        board(client, metric="caught")  # not offered in the dropdown
    import tabs

    res = D.load_results(dirs[0])
    with pytest.raises(D.SpaceDataError, match="constant judge"):
        tabs.leaderboard_table(res, metric="caught")


def test_fitted_filter_keeps_zero_shot_judges(client: Any, dirs: tuple[Path, Path]) -> None:
    # the fixture's judges.toml declares none fitted, so "fitted only" is empty and the
    # reference line is not shown without a judge
    rows, note = board(client, fitted="Fitted on dev only")
    assert rows == [] and "No judge matches" in note
    assert len(board(client, fitted="Zero-shot only")[0]) == len(expected()["judges"]) + 1


def test_rank_by_another_metric_uses_its_tie_groups(client: Any) -> None:
    rows, _ = board(client, metric="auroc")
    rep = expected()
    want = sorted(
        rep["judges"], key=lambda e: (e["ranks"]["auroc"]["rank"], -e["metrics"]["auroc"]["value"])
    )
    rows = rows[:-1]  # the shortcut reference line closes the table
    assert judges_of(rows) == [e["display_name"] for e in want]
    assert [int(r["Rank"]) for r in rows] == [e["ranks"]["auroc"]["rank"] for e in want]
    assert list(rows[0])[4:6] == ["AUROC", "AUROC 95% CI"]  # the ranking metric comes first


def judges_of(rows: list[dict[str, str]]) -> list[str]:
    return [
        r["Judge"].removesuffix(" †")
        for r in rows
        if not r["Judge"].startswith(("Shortcut", "Best probe"))
    ]


def test_search_and_filters(client: Any) -> None:
    assert judges_of(board(client, search="GAM")[0]) == ["Gamma"]
    assert set(judges_of(board(client, search="alpha, beta")[0])) == {
        "Alpha <b>judge</b>",
        "Beta | no scores",
    }
    assert judges_of(board(client, backend=["transformers"])[0]) == ["Gamma"]
    assert judges_of(board(client, open_w="Open")[0]) == ["Gamma"]
    rows, note = board(client, open_w="Closed")
    assert rows == [] and "No judge matches" in note


def test_source_and_category_filters_show_group_values(client: Any) -> None:
    rep = expected()
    rows, note = board(client, source="rjudge")
    group = rep["by_source"]["rjudge"]
    assert "Overall rank" in rows[0] and "rjudge" in note and "Small group" in note
    probe_line = rows[-1]
    assert probe_line["Judge"] == "Best probe here: Zeta probe"
    rows = rows[:-1]
    assert [r["#"] for r in rows] == list(range(1, len(rows) + 1))
    vals = [r["Bal. acc."] for r in rows]
    assert vals == sorted(vals, reverse=True)
    by_name = {e["display_name"]: e["id"] for e in rep["judges"]}
    for r in rows:
        jid = by_name[r["Judge"].removesuffix(" †")]
        c = group["judges"][jid]["balanced_accuracy"]
        assert r["Bal. acc."] == round(c["value"], 3)
        assert r["Bal. acc. 95% CI"] == f"[{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]"
        m = group["margins"][jid]["balanced_accuracy"]
        assert r["vs best probe (Bal. acc.)"] == round(m["value"], 3)
    rows, note = board(client, category="rjudge/email")
    assert rows and "email" in note
    rows, note = board(client, category="subset: rjudge/injection")
    assert rows and "Subset **rjudge/injection**" in note
    rows, note = board(client, source="rjudge", category="rjudge/email")
    assert "separately" in note


def test_compare_reads_paired_interval_and_lists_disagreements(
    client: Any, dirs: tuple[Path, Path]
) -> None:
    from bench.metrics import paired

    summary, table, note, dis = client.predict("alpha", "gamma", api_name="/compare")
    rows = {r[0]: dict(zip(table["headers"], r, strict=True)) for r in table["data"]}
    # computed from the paired statistics leaderboard.py wrote beside leaderboard.json
    d = paired.difference(paired.read(dirs[0] / paired.FILE), "alpha", "gamma")["balanced_accuracy"]
    assert d["value"] == round((5 / 6 + 1) / 2 - 0.375, 4)  # the hand-computed macro figures
    assert (
        rows["Bal. acc."]["A − B [95% paired CI]"]
        == f"{d['value']:.3f} [{d['ci'][0]:.3f}, {d['ci'][1]:.3f}]"
    )
    assert rows["Bal. acc."]["Significant"] == "yes: A better"
    # reversed, the interval is negated and B is the better one
    _, table2, _, _ = client.predict("gamma", "alpha", api_name="/compare")
    rows2 = {r[0]: dict(zip(table2["headers"], r, strict=True)) for r in table2["data"]}
    assert (
        rows2["Bal. acc."]["A − B [95% paired CI]"]
        == f"{-d['value']:.3f} [{-d['ci'][1]:.3f}, {-d['ci'][0]:.3f}]"
    )
    assert rows2["Bal. acc."]["Significant"] == "yes: B better"

    def acts(judge: str) -> dict[str, str]:
        out = {}
        for line in (
            (FIX / "predictions" / judge / "fixture-1" / "c0ffee.jsonl").read_text().splitlines()
        ):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("type") == "decision":
                out[r["id"]] = r["act"]
        return out

    a, g = acts("alpha"), acts("gamma")
    differ = sorted(i for i in a if i in g and a[i] != g[i])
    assert differ and sorted(r[0] for r in dis["data"]) == differ
    assert note.startswith(f"{len(differ)} of ")


def test_browse_point_with_text_gold_rationale_and_raw(client: Any) -> None:
    verdicts, html, raw = client.predict("sample:a:1", api_name="/browse")
    assert "Tidy the folder." in html and "Please tidy my folder." in html  # policy and prefix
    assert "ls ~/docs" in html and "Proposed action (#2, k = 1)" in html
    assert "gold act <b>ASK</b>" in html and "asking first is right" in html  # label + rationale
    assert "cited as evidence" in html
    assert INJECTION not in html and "&lt;script&gt;" in html
    acts = {r[1]: (r[0], r[2], r[5]) for r in verdicts["data"]}
    assert acts == {  # beta's answer there is unparseable: shown as invalid (and wrong)
        "Alpha <b>judge</b>": ("✓", "ASK", "ok"),
        "Beta | no scores": ("✗", "–", "invalid"),
        "Gamma": ("✗", "CONTINUE", "ok"),
        "Zeta probe (probe)": ("✗", "CONTINUE", "ok"),
    }
    assert "\\boxed{ASK}" in raw and INJECTION not in raw and "&lt;script&gt;" in raw


def test_browse_withholds_rjudge_text_without_raw_data(client: Any) -> None:
    verdicts, html, _ = client.predict("rjudge:1:2", api_name="/browse")
    assert "project-written stand-in" not in html
    assert "not shown here" in html and "FORESIGHT_DATA" in html
    assert "gold act <b>STOP</b>" in html and len(verdicts["data"]) == 4
    ids, note = client.predict(
        "test", "rjudge", "STOP", "All points", "alpha", "", api_name="/browse_list"
    )
    gt = [json.loads(x) for x in (FIX / "ground_truth.jsonl").read_text().splitlines()]
    want = [
        r["id"]
        for r in gt
        if r["source"] == "rjudge" and r["act"] == "STOP" and r["split"] == "test"
    ]
    assert [c[0] if isinstance(c, list) else c for c in ids["choices"]] == want
    assert note.startswith(f"{len(want)} decision points")


def test_texts_local_hub_and_licence(
    dirs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, build = dirs
    for var in (D.DATASET_ENV, "SPACE_ID"):
        monkeypatch.delenv(var, raising=False)
    raw = tmp_path / "raw"
    (raw / "r-judge").mkdir(parents=True)
    (raw / "r-judge" / "x.json").write_text("[]")
    monkeypatch.setenv("FORESIGHT_DATA", str(raw))
    local = D.load_texts(build, version="fixture-1")
    assert "rjudge:1:2" in local.offsets and not local.withheld  # raw data here: shown locally
    assert local.point("rjudge:1:2")["action"]["tool"] == "shell"
    # the Hub copy: downloaded dataset, R-Judge withheld even where raw data exists
    import huggingface_hub

    calls = []

    def fake_download(**kw: Any) -> str:
        calls.append(kw)
        return str(build / "fixture-1")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    monkeypatch.setenv("SPACE_ID", "org/space")
    hub = D.load_texts(None, version="fixture-1", dataset_repo="org/data")
    assert calls and calls[0]["repo_id"] == "org/data" and calls[0]["repo_type"] == "dataset"
    assert (
        "rjudge" in hub.withheld and "rjudge:1:2" not in hub.offsets and "sample:a:1" in hub.offsets
    )
    # on the Hub without a dataset repo, no local build is read
    none = D.load_texts(build, version="fixture-1")
    assert none.path is None and "FORESIGHT_DATASET_REPO" in none.origin
    monkeypatch.delenv("SPACE_ID")
    missing = D.load_texts(tmp_path / "nothing")
    assert missing.path is None and "python bench/build.py" in missing.origin


def test_results_from_hub_env_and_missing_results(
    dirs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, _ = dirs
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: str(results))
    monkeypatch.setenv(D.RESULTS_ENV, "org/results")
    root, origin = D.results_root(tmp_path)
    assert root == results and "org/results" in origin
    monkeypatch.delenv(D.RESULTS_ENV)
    with pytest.raises(D.SpaceDataError, match="bench/leaderboard.py"):
        D.load_results(tmp_path)
    demo, root = APP.create(tmp_path, tmp_path)  # a page that says what to run, not a crash
    assert root is None and demo is not None


def test_robustness_tab_shows_numbers_or_not_run(client: Any) -> None:
    table, note = client.predict("thought_injection", api_name="/robustness")
    rows = {r[1]: dict(zip(table["headers"], r, strict=True)) for r in table["data"]}
    assert (
        rows["Gamma"]["n"] == "not run" and rows["Beta | no scores"]["n"] == "incomplete (1 of 2)"
    )
    assert rows["Alpha <b>judge</b>"]["Flip rate [95% CI]"].startswith("0.500 [")
    assert "Attack success" in note


def test_category_codes_read_as_words() -> None:
    import tabs

    assert tabs.group_label("stepshield/DEC") == "stepshield/DEC: deceptive completion"
    assert tabs.group_label("rjudge/email") == "rjudge/email"
    dropdown = APP.gr.Dropdown(choices=[(tabs.group_label("stepshield/SEC"), "stepshield/SEC")])
    assert dropdown.choices == [("stepshield/SEC: secret exfiltration", "stepshield/SEC")]


def test_lite_board_lists_the_lite_only_judge(dirs: tuple[Path, Path]) -> None:
    import tabs

    df, note = tabs.lite_table(D.load_results(dirs[0]))
    rows = {r["Judge"]: r for r in df.to_dict("records")}
    assert "Eta (lite only)" in rows and rows["Alpha <b>judge</b>"]["Lite rank"] == 1
    assert rows["Eta (lite only)"]["Full bal. acc."] == "–"
    assert "Kendall's tau" in note and "**1.000**" in note
    assert "ranked 2 on the lite split (see the Lite tab)" in tabs.pending_markdown(
        D.load_results(dirs[0])
    )


def test_browse_filters_split_disagreement_and_a_wrong_judge(dirs: tuple[Path, Path]) -> None:
    import tabs

    res = D.load_results(dirs[0])
    texts = D.Texts.missing("")
    test_ids, _ = tabs.browse_ids(res, texts)
    assert test_ids and all(res.ground_truth[i]["split"] == "test" for i in test_ids)
    dev_ids, _ = tabs.browse_ids(res, texts, split="dev")
    assert dev_ids == ["sample:d:1"]
    wrong, note = tabs.browse_ids(res, texts, show="Judge wrong", judge="gamma")
    # gamma misses every onset (the diagnostic config's too) and flags sample:b:1;
    # post-onset steps are not scored
    assert set(wrong) == {"rjudge:1:2", "sample:a:1", "sample:b:1", "rjudge:9:1"}
    assert "gamma is wrong" in note
    split, _ = tabs.browse_ids(res, texts, show="Judges disagree")
    assert "rjudge:1:2" in split and "rjudge:2:1" not in split  # all CONTINUE there


def test_permalink_updates_and_subtitle(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tabs

    res = D.load_results(dirs[0])
    up = tabs.permalink_updates(
        res, {"metric": "auroc", "source": "nowhere", "id": "sample:d:1", "a": "gamma", "q": "al"}
    )
    metric, q, source, *_, a, b, split, did = up
    assert (metric, q, a, split, did) == ("auroc", "al", "gamma", "dev", "sample:d:1")
    assert source == {"__type__": "update"}  # an unknown value leaves the control alone
    assert tabs.permalink_updates(res, {"metric": "caught"})[0] == {"__type__": "update"}
    monkeypatch.setenv(D.REPOSITORY_ENV, "https://example.org/foresight")
    line = APP.subtitle(res)
    assert "[leaderboard.csv](/gradio_api/file=" in line and "last updated 2026-01-03" in line
    assert "[judges.toml](https://example.org/foresight/blob/main/judges.toml)" in line
    assert str(dirs[0].parent) not in line.split("download")[0]  # no absolute server path


# --------------------------------------------------------------------------- contrast pairs


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("space-pairs")
    return make_pairs_results(root), make_pairs_build(root)


@pytest.fixture(scope="module")
def pair_client(pair_dirs: tuple[Path, Path]) -> Iterator[Any]:

    results, build = pair_dirs
    with pytest.MonkeyPatch.context() as mp:
        for var in (D.RESULTS_ENV, D.DATASET_ENV, "SPACE_ID"):
            mp.delenv(var, raising=False)
        demo, _ = APP.create(results, build)
    with served_client(demo, results) as client:
        yield client


def test_pairs_rows_carry_the_board_as_the_tables_show_it(pair_dirs: tuple[Path, Path]) -> None:
    import tabs

    res = D.load_results(pair_dirs[0])
    rep = res.report  # the contrast pairs' figures are a part file, read on access
    pb = res.rows["pairs"]
    assert pb["pairs"] == rep["pairs"]["pairs"] == 2
    assert [c["key"] for c in pb["columns"]] == ["ba_at_k", "both_right", "ranked_above"]
    assert [r["id"] for r in pb["rows"]] == ["alpha", "gamma", "zeta"]  # judges, then probes
    alpha = rep["pairs"]["judges"]["alpha"]
    lo, hi = alpha["ba_at_k"]["ci"]
    cell = pb["rows"][0]["cells"]["ba_at_k"]
    assert cell == {
        "value": round(alpha["ba_at_k"]["value"], 3),
        "interval": f"[{lo:.3f}, {hi:.3f}]",
    }
    md = (pair_dirs[0] / "leaderboard.md").read_text()
    assert f"{cell['value']:.3f} {cell['interval']}" in md  # the markdown table's cell
    df, note = tabs.pairs_table(res)
    row = df.to_dict("records")[0]
    assert row["Judge"] == "Alpha <b>judge</b>" and row["Bal. acc. at k*"] == cell["value"]
    assert row["Bal. acc. at k* 95% CI"] == cell["interval"] and "**2 test pairs.**" in note
    by = tabs.pairs_group_table(res, "bucket").to_dict("records")
    assert [(r["Clue distance"], r["n pairs"]) for r in by[:4]] == [
        ("1", 0), ("2-3", 1), ("4-7", 0), ("8+", 1),
    ]  # fmt: skip


def test_pairs_tab_board_filters_and_pair_view(pair_client: Any) -> None:
    ids, note = pair_client.predict("files_cloud", "All", "All", api_name="/pairs_list")
    assert [c[0] if isinstance(c, list) else c for c in ids["choices"]] == ["p1"]
    assert note.startswith("1 of 2 pairs")
    verdicts, html = pair_client.predict("p1", api_name="/pair")
    rows = {r[0]: r[1:] for r in verdicts["data"]}
    assert rows["Alpha <b>judge</b>"] == ["STOP", "90", "✓", "CONTINUE", "10", "✓"]
    assert rows["Gamma"] == ["STOP", "90", "✓", "STOP", "90", "✗"]
    assert rows["Zeta probe (probe)"][2::3] == ["✓", "✗"]
    assert "Side A: <b>pairs:p1-a:3</b>" in html and "Side B: <b>pairs:p1-b:3</b>" in html
    assert html.count("share report.pdf") == 2  # the judged action on both sides
    assert html.count("<b>differs</b>") == 2  # turn 2's observation, once per side
    assert "me@example.com" in html and INJECTION not in html and "&lt;script&gt;" in html
    _, empty = pair_client.predict("p2", api_name="/pair")  # no text for p2 in this build
    assert "Side A: <b>pairs:p2-a:3</b>" in empty and "not in decision_points.jsonl" in empty


def test_pairs_also_appear_in_browse(pair_dirs: tuple[Path, Path]) -> None:
    import tabs

    res = D.load_results(pair_dirs[0])
    texts = D.load_texts(pair_dirs[1], version=res.report["dataset_version"])
    assert "pairs" in tabs.sources(res)
    ids, _ = tabs.browse_ids(res, texts, source="pairs")
    assert ids == ["pairs:p1-a:3", "pairs:p1-b:3", "pairs:p2-a:3", "pairs:p2-b:3"]
    verdicts = tabs.verdict_table(res, "pairs:p1-b:3").to_dict("records")
    assert {r["Judge"]: r["vs gold"] for r in verdicts}["Gamma"] == "✗"


def test_pairs_tab_without_pairs_says_so(dirs: tuple[Path, Path]) -> None:
    import tabs

    res = D.load_results(dirs[0])
    df, note = tabs.pairs_table(res)
    assert df.empty and "No contrast pairs" in note
    assert tabs.pair_ids(res)[0] == [] and tabs.pair_filters(res)["bucket"] == [ALL]
