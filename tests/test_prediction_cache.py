"""The leaderboard's input side: each predictions file reduced to columns through the one
validator, cached by content (``bench.report.columns``), its bad lines and repeated ids still
reported from the cache, and the same figures as the row-by-row path."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.core.errors import DataError
from bench.core.taxonomy import load_taxonomy
from bench.core.verdict import from_row
from bench.metrics.inputs import Gold, Predictions, load_cost_matrix
from bench.metrics.point import evaluate
from bench.report import columns
from bench.report.inputs import load_ground_truth, read_predictions
from bench.report.scoring import diagnostic_configs, evaluated_rows

FIX = Path(__file__).parent / "fixtures" / "leaderboard"
COST = Path(__file__).resolve().parents[1] / "leaderboards" / "cost_matrix.toml"


def decision(i: int, act: str | None = "CONTINUE", **kw: Any) -> dict[str, Any]:
    """A decision line as the writer writes it."""
    row = {
        "type": "decision",
        "id": f"s:t{i // 3}:{i % 3 + 1}",
        "status": "ok" if act else "invalid",
        "act": act,
        "risk": 10,
        "fail": None,
        "harm": None,
        "src": None,
        "cite": None,
        "reason": "",
        "raw": f"\\boxed{{{act}}}",
        "latency_s": 0.5,
        "batch_size": 1,
        "warmup": i == 0,
        "tokens_in": 100,
        "tokens_out": 5,
        "error": None,
        "attempts": 1,
    }
    return row | kw


def write(path: Path, lines: list[Any]) -> Path:
    """``lines`` as JSON Lines (a str is written as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [x if isinstance(x, str) else json.dumps(x) for x in lines]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


RUN = {"type": "run", "judge": "j", "dataset_version": "v1", "start": "2026-01-01T00:00:00Z"}


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files parsed (not read from the cache) during a test."""
    seen: list[str] = []
    real = columns.reduce_lines

    def spy(data: bytes, name: str, vocab: Any = None) -> columns.Reduced:
        seen.append(name)
        return real(data, name, vocab)

    monkeypatch.setattr(columns, "reduce_lines", spy)
    return seen


def test_an_unchanged_file_is_parsed_once_and_a_changed_one_again(
    tmp_path: Path, parses: list[str]
) -> None:
    root, cache = tmp_path / "pred", tmp_path / "cache"
    f = write(root / "j" / "v1" / "abc.jsonl", [RUN, *(decision(i) for i in range(6))])
    first = read_predictions(f, root, cache)
    again = read_predictions(f, root, cache)
    assert parses == [str(f)]  # the second read came from the cache
    assert len(list(cache.glob("*.npz"))) == 1
    for name in columns.DecisionColumns.__dataclass_fields__:
        a, b = getattr(first.columns, name), getattr(again.columns, name)
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name
    assert again.runs == first.runs == (RUN,)
    write(f, [RUN, decision(0, "STOP"), *(decision(i) for i in range(1, 6))])
    changed = read_predictions(f, root, cache)
    assert parses == [str(f), str(f)]
    assert changed.decisions["s:t0:1"]["act"] == "STOP"
    assert first.decisions["s:t0:1"]["act"] == "CONTINUE"
    assert len(list(cache.glob("*.npz"))) == 2


def test_a_changed_vocabulary_or_rule_changes_the_cache_key() -> None:
    vocab = load_taxonomy()
    key = columns.fingerprint(vocab)
    fewer = type(vocab)(**{**vocab.__dict__, "fail": dict(list(vocab.fail.items())[1:])})
    assert columns.fingerprint(fewer) != key
    columns._code_fingerprint.cache_clear()
    try:
        old = columns.CACHE_FORMAT
        columns.CACHE_FORMAT = old + 1
        assert columns.fingerprint(vocab) != key
    finally:
        columns.CACHE_FORMAT = old
        columns._code_fingerprint.cache_clear()
    assert columns.fingerprint(vocab) == key


def test_a_bad_line_is_reported_with_file_line_and_reason_from_the_cache(
    tmp_path: Path, parses: list[str]
) -> None:
    root, cache = tmp_path / "pred", tmp_path / "cache"
    f = write(root / "j" / "v1" / "abc.jsonl", [RUN, decision(0), "{not json", decision(1)])
    messages = []
    for _ in range(2):
        with pytest.raises(DataError) as e:
            read_predictions(f, root, cache)
        messages.append(str(e.value))
    assert parses == [str(f)]  # the second run read the cache
    assert messages[0] == messages[1]
    assert messages[1].startswith(f"{f}:3: not valid JSON")
    assert "fix or delete that line" in messages[1]


def test_a_corrupt_cache_entry_is_ignored_and_rewritten(
    tmp_path: Path, parses: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    root, cache = tmp_path / "pred", tmp_path / "cache"
    f = write(root / "j" / "v1" / "abc.jsonl", [RUN, decision(0), decision(1)])
    read_predictions(f, root, cache)
    (entry,) = cache.glob("*.npz")
    entry.write_bytes(b"not a zip")
    with caplog.at_level(logging.WARNING):
        got = read_predictions(f, root, cache)
    assert "unreadable predictions cache" in caplog.text
    assert len(parses) == 2 and got.columns.ids.tolist() == ["s:t0:1", "s:t0:2"]
    read_predictions(f, root, cache)
    assert len(parses) == 2  # rewritten: read from the cache again


def test_repeated_ids_warn_once_per_file_even_when_identical(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, parses: list[str]
) -> None:
    root, cache = tmp_path / "pred", tmp_path / "cache"
    rows = [decision(i) for i in range(4)]
    f = write(root / "j" / "v1" / "abc.jsonl", [RUN, *rows, RUN, *rows])  # two runs, one file
    for _ in range(2):  # parsed, then from the cache
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            got = read_predictions(f, root, cache)
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith("j/v1/abc.jsonl: 4 id(s) were answered more than once")
        assert "every repeat gave the same verdict" in warnings[0]
        assert "its last line wins" in warnings[0]
        assert len(got.columns) == 4
    assert len(parses) == 1


def test_a_retried_error_is_not_a_repeat_but_a_changed_verdict_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "pred"
    err = decision(0, None, status="error", error="timeout")
    f = write(root / "j" / "v1" / "a.jsonl", [RUN, err, decision(1), decision(0, "ASK")])
    with caplog.at_level(logging.WARNING):
        got = read_predictions(f, root)
    assert caplog.text == ""
    assert got.decisions["s:t0:1"]["act"] == "ASK"
    g = write(root / "j" / "v1" / "b.jsonl", [RUN, decision(0), decision(1), decision(0, "STOP")])
    with caplog.at_level(logging.WARNING):
        got = read_predictions(g, root)
    assert "1 id(s) were answered more than once" in caplog.text
    assert "1 id(s) were decided more than once with different verdicts (e.g. s:t0:1)" in (
        caplog.text
    )
    assert got.decisions["s:t0:1"]["act"] == "STOP"  # the last line wins


HOSTILE: list[dict[str, Any]] = [
    {"status": None},
    {"act": "continue"},
    {"act": 1},
    {"act": True},
    {"risk": "high"},
    {"risk": 150},
    {"risk": True},
    {"risk": 1},
    {"risk": 1.0},
    {"risk": 37.5},
    {"risk": -0.0},
    {"risk": None},
    {"cite": 2},
    {"cite": 2.0},
    {"cite": True},
    {"cite": 0},
    {"fail": "no-such-mode"},
    {"fail": "NONE"},
    {"fail": ["a list"]},
    {"harm": {"an": "object"}},
    {"status": "invalid"},
    {"status": "error", "act": None},
    {"status": "weird"},
    {"status": "partial"},
    {"status": 1},
    {"warmup": "yes"},
    {"latency_s": "slow", "tokens_in": True, "tokens_out": 3.5},
]
"""Verdict fields the one validator judges (each over a plain ok CONTINUE line)."""

RAW_LINES = [
    # a lone surrogate in the raw text: only json.loads reads it, the validator notes it
    '{"type": "decision", "id": "h:s:1", "status": "ok", "act": "STOP", "raw": "bad \\ud800"}',
    # a NaN risk and an integer beyond 64 bits: json.loads reads both (orjson would not)
    '{"type": "decision", "id": "h:s:2", "status": "ok", "act": "ASK", "risk": NaN}',
    '{"type": "decision", "id": "h:s:3", "status": "ok", "act": "ASK", '
    '"cite": 123456789012345678901234567890}',
    '{"type": "decision", "id": "h:s:4", "status": "ok", "act": "ASK", "latency_s": Infinity}',
]


def _reference(lines: list[str]) -> dict[str, dict[str, Any]]:
    """The row-by-row path the columns replace: json.loads, ``from_row``, the last line wins."""
    out: dict[str, dict[str, Any]] = {}
    for text in lines:
        row = json.loads(text)
        if row.get("type") != "decision":
            continue
        v = from_row(row, load_taxonomy())
        timing = {}
        for k in ("latency_s", "tokens_in", "tokens_out"):
            x = row.get(k)
            ok = isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            timing[k] = float(x) if ok else None
        out[row["id"]] = {
            "id": row["id"],
            "status": v.status,
            "act": v.act,
            "risk": None if v.risk is None else float(v.risk),
            "fail": v.fail,
            "harm": v.harm,
            "src": v.src,
            **timing,
            "warmup": row.get("warmup") is True,
        }
    return out


def test_columns_give_what_the_one_validator_gives_line_by_line(tmp_path: Path) -> None:
    lines = [json.dumps(RUN)]
    lines += [json.dumps(decision(i) | {"id": f"h:t{i}:1"} | kw) for i, kw in enumerate(HOSTILE)]
    lines += RAW_LINES
    lines.append(json.dumps(decision(0) | {"id": "h:t0:1", "act": "ASK"}))  # replaces line 2
    f = write(tmp_path / "pred" / "j" / "v1" / "a.jsonl", lines)
    got = read_predictions(f, tmp_path / "pred", tmp_path / "cache")
    want = _reference(lines)
    assert list(got.decisions) == list(want)
    for i, row in want.items():
        assert _same(dict(got.decisions[i]), row), (i, got.decisions[i], row)
    # and once more from the cache
    again = read_predictions(f, tmp_path / "pred", tmp_path / "cache")
    assert all(_same(dict(again.decisions[i]), dict(got.decisions[i])) for i in want)
    statuses = {r["status"] for r in want.values()}
    assert statuses == {"ok", "partial", "invalid", "error"}  # the fixture covers each


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_the_columns_score_the_fixture_as_the_row_path_did(tmp_path: Path) -> None:
    gt_rows, meta = load_ground_truth(FIX / "ground_truth.jsonl")
    gold = Gold.from_rows(evaluated_rows(gt_rows, diagnostic_configs(meta)))
    cost = load_cost_matrix(COST)
    files = sorted((FIX / "predictions").glob("*/*/*.jsonl"))
    scored = 0
    for f in files:
        lines = [x for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        try:
            want = _reference(lines)
        except json.JSONDecodeError:
            want = _reference(lines[:-1])  # the fixture's torn last line
        if not set(gold.ids.tolist()) <= set(want):
            continue
        got = read_predictions(f, FIX / "predictions", tmp_path / "cache").columns
        at = np.array([got.position[i] for i in gold.ids.tolist()])
        old = Predictions.from_rows([want[i] for i in gold.ids.tolist()])
        a, b = evaluate(gold, old, cost), evaluate(gold, got.take(at).predictions(), cost)
        assert _same(a.metrics, b.metrics) and a.counts == b.counts, f
        assert _same(a.taxonomy, b.taxonomy) and _same(a.roc, b.roc), f
        assert _same(a.reliability, b.reliability), f
        scored += 1
    assert scored >= 3


def test_the_bootstrap_in_chunks_of_judges_gives_the_same_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.report import scoring
    from bench.report.inputs import discover

    gt_rows, meta = load_ground_truth(FIX / "ground_truth.jsonl")
    files, _, _ = discover(FIX / "predictions", str(meta["dataset_version"]), tmp_path / "cache")
    rows = evaluated_rows(gt_rows, diagnostic_configs(meta))
    settings = scoring.Settings(load_cost_matrix(COST), resamples=200, seed=3)
    sc = scoring.score(gt_rows, rows, str(meta["dataset_version"]), files, settings)
    assert len(sc.stats) >= 3
    masks = (None, sc.traj_source == sc.traj_source[0])
    whole = [sc.boot(mask) for mask in masks]  # every judge in one product
    monkeypatch.setattr(scoring, "BOOT_CHUNK", 1)
    for mask, ref in zip(masks, whole, strict=True):
        one = sc.boot(mask)  # one judge per product
        assert list(one.samples) == list(ref.samples)
        for j in ref.samples:
            for m, x in ref.samples[j].items():
                assert np.array_equal(x, one.samples[j][m], equal_nan=True), (j, m)


def test_metrics_from_stats_only_gives_the_same_figures() -> None:
    from bench.metrics.spec import BREAKDOWN_METRICS
    from bench.metrics.stats import METRICS, metrics_from_stats

    rng = np.random.default_rng(5)
    values = np.array([0, 3, 12, 50, 51, 99, 100])
    summed = rng.poisson(4, size=(50, 19 + 2 * len(values))).astype(np.float64)
    cost = load_cost_matrix(COST)
    every = metrics_from_stats(summed, values, cost)
    some = metrics_from_stats(summed, values, cost, only=BREAKDOWN_METRICS)
    assert list(some) == [m for m in METRICS if m in BREAKDOWN_METRICS]
    assert "ece" not in some and "brier" not in some
    for m, x in some.items():
        assert np.array_equal(x, every[m], equal_nan=True), m
    with pytest.raises(Exception, match="unknown metric"):
        metrics_from_stats(summed, values, cost, only=["accuracy_typo"])


def test_the_fast_line_reader_reads_what_json_loads_reads() -> None:
    from bench.judging import predictions

    lines = [
        json.dumps(RUN | {"weights": {"seed": 123456789012345678901234567890}}),
        *(json.dumps(decision(i) | kw) for i, kw in enumerate(HOSTILE)),
        *RAW_LINES,
        '{"type": "decision", "id": "h:s:5", "act": "STOP", "risk": 1e20}',
        "[1, 2]",
        '{"type": "decision", "act": "STOP"}',
        '{"type": "decision", "id": "torn", "act": "ST',
    ]
    data = "\n".join(lines).encode()
    slow = predictions.scan_bytes(data, "f.jsonl")
    fast = predictions.scan_bytes(data, "f.jsonl", fast=True)
    assert fast[1] == slow[1] and [str(b) for b in slow[1]] == [
        "f.jsonl:34: a JSON list, not an object",
        "f.jsonl:35: a decision line without an id",
    ]
    assert len(fast[0]) == len(slow[0]) == len(lines) - 3
    for a, b in zip(fast[0], slow[0], strict=True):
        assert _same(a, b) and {k: type(v) for k, v in a.items()} == {
            k: type(v) for k, v in b.items()
        }
    assert isinstance(fast[0][0]["weights"]["seed"], int)  # a run line is read whole by json
