"""The embedded sample corpus: it loads cleanly, spans what it promises, its gold labels are
well-formed, bad lines become rejects, and it shares no passage with the upstream datasets."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.core.labels import ACTS
from bench.core.schema import Trajectory, decision_points
from bench.core.taxonomy import load_taxonomy
from bench.sources import get
from bench.sources.adapters.sample import CASES, CATEGORIES, SAMPLE_DIR, SampleSource
from bench.sources.authoring import load_case
from bench.sources.pair_files import PAIRS_DIR, load_all

TAX = load_taxonomy()
LEAK_LEN = 60
"""Length of a shared passage that counts as copied text."""


@pytest.fixture(scope="module")
def corpus() -> list[Trajectory]:
    res = get("sample").extract(SampleSource().default_path(Path("/nonexistent")))
    assert res.rejects == [], [r.reason for r in res.rejects]
    return res.trajectories


def _gold(t: Trajectory) -> dict[str, Any]:
    return dict(t.metadata["gold"])


def test_adapter_registration() -> None:
    src = get("sample")
    assert isinstance(src, SampleSource)
    assert (src.name, src.folder, src.license) == ("sample", "sample", "Apache-2.0")
    assert src.redistributable is True and src.upstream is None
    # the corpus ships with the checkout, whatever the raw-data root is
    assert src.default_path(Path("/somewhere/else")) == SAMPLE_DIR
    assert (SAMPLE_DIR / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_size_and_spread(corpus: list[Trajectory]) -> None:
    assert 36 <= len(corpus) <= 48
    assert len({t.id for t in corpus}) == len(corpus)
    assert set(t.category for t in corpus) == set(CATEGORIES)
    labels = Counter(t.label for t in corpus)
    assert labels["safe"] >= 15 and labels["unsafe"] >= 15
    lengths = [len(t.actions()) for t in corpus]
    assert sum(n <= 2 for n in lengths) >= 5
    assert sum(8 <= n <= 15 for n in lengths) >= 5
    assert max(lengths) <= 15
    acts = Counter(_gold(t)["act"] for t in corpus if t.label == "unsafe")
    assert acts["ASK"] >= 3 and acts["STOP"] >= 3
    srcs = {_gold(t)["src"] for t in corpus if t.label == "unsafe"}
    assert len(srcs) >= 6
    tags = Counter(tag for t in corpus for tag in t.metadata["tags"])
    assert tags["hard-negative"] >= 5 and tags["injection"] >= 3
    assert tags["refusal"] + tags["correct-ask"] >= 3
    assert any(t.role == "environment" for tr in corpus for t in tr.turns)


def test_records_are_canonical(corpus: list[Trajectory]) -> None:
    files = sorted((SAMPLE_DIR / CASES).glob("*.yaml"))
    assert len(files) == len(corpus) == 42
    for f, t in zip(files, corpus, strict=True):
        (record,) = load_case(f, "sample").records
        assert json.loads(json.dumps(record)) == t.to_dict()
        assert t.source == "sample" and t.id == f"sample:{t.source_id}" == f"sample:{f.stem}"
        assert t.license == "Apache-2.0" and t.group
        assert t.policy.system


def test_the_corpus_is_data_not_code() -> None:
    # the cases are YAML data read by the shared authoring format; no script writes them
    assert not list(SAMPLE_DIR.glob("*.py"))
    assert not (SAMPLE_DIR / "trajectories.jsonl").exists()


def test_gold_in_vocabulary_and_in_range(corpus: list[Trajectory]) -> None:
    for t in corpus:
        g = _gold(t)
        n = len(t.actions())
        assert g["rationale"].strip(), t.id
        if t.label == "safe":
            assert g["onset"] is None and g["act"] is None and g["cite"] is None, t.id
            assert (g["fail"], g["harm"], g["src"]) == ("NONE", "NONE", "NONE"), t.id
            assert g["post_act"] is None, t.id
            continue
        assert 1 <= g["onset"] <= n, t.id
        assert g["act"] in ("ASK", "STOP"), t.id
        assert g["fail"] in TAX.fail and g["harm"] in TAX.harm and g["src"] in TAX.src, t.id
        dps = list(decision_points(t))
        history = dps[g["onset"] - 1].history
        if g["cite"] is not None:
            assert 1 <= g["cite"] <= len(history), t.id
        if g["onset"] < n:
            assert g["post_act"] in ACTS, t.id
        else:
            assert g["post_act"] is None, t.id


def test_cited_turns_carry_evidence(corpus: list[Trajectory]) -> None:
    """The cited turn is a user or environment message, or an agent step with an observation
    (evidence comes from what the agent saw)."""
    cited = 0
    for t in corpus:
        g = _gold(t)
        if g["cite"] is None:
            continue
        cited += 1
        turn = t.turns[g["cite"] - 1]
        assert turn.role != "agent" or turn.observation, t.id
    assert cited >= 15


def test_onsets_before_the_last_action(corpus: list[Trajectory]) -> None:
    early = [t.id for t in corpus if t.label == "unsafe" and _gold(t)["onset"] < len(t.actions())]
    assert len(early) >= 5


def test_paired_groups(corpus: list[Trajectory]) -> None:
    by_group: dict[str, set[str | None]] = {}
    for t in corpus:
        by_group.setdefault(t.group, set()).add(t.label)
    pairs = [g for g, labels in by_group.items() if labels == {"safe", "unsafe"}]
    assert len(pairs) >= 3


def _case(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((SAMPLE_DIR / CASES / f"{name}.yaml").read_text(encoding="utf-8")))


def test_malformed_cases_become_rejects(tmp_path: Path) -> None:
    unsafe, safe = _case("inbox-summary-injected"), _case("inbox-summary-clean")
    bad_vocab = json.loads(json.dumps(unsafe)) | {"id": "b-vocab"}
    bad_vocab["gold"]["fail"] = "data_exposur"
    bad_onset = json.loads(json.dumps(safe)) | {"id": "c-onset"}
    bad_onset["turns"][0]["onset"] = True  # a user turn cannot be the onset
    bad_role = json.loads(json.dumps(safe)) | {"id": "d-role"}
    bad_role["turns"][0] = {"assistant": "hello"}
    no_turns = {k: v for k, v in safe.items() if k != "turns"} | {"id": "e-noturns"}
    dup = json.loads(json.dumps(safe)) | {"id": "f-dup"}
    files = {
        "a-good": json.loads(json.dumps(unsafe)) | {"id": "a-good"},
        "b-vocab": bad_vocab,
        "c-onset": bad_onset,
        "d-role": bad_role,
        "e-noturns": no_turns,
        "g-wrongid": json.loads(json.dumps(safe)) | {"id": "not-the-file-name"},
        "h-list": ["a", "list"],
    }
    (tmp_path / CASES).mkdir()
    for name, doc in files.items():
        (tmp_path / CASES / f"{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    (tmp_path / CASES / "i-notyaml.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    (tmp_path / CASES / "f-dup.yaml").write_text(yaml.safe_dump(dup), encoding="utf-8")
    res = SampleSource().extract(tmp_path)
    assert [t.id for t in res.trajectories] == ["sample:a-good", "sample:f-dup"]
    reasons = {r.file.removeprefix("cases/"): r.reason for r in res.rejects}
    assert sorted(reasons) == [f"{n}.yaml" for n in
                               ("b-vocab", "c-onset", "d-role", "e-noturns", "g-wrongid",
                                "h-list", "i-notyaml")]
    assert all(r.source == "sample" for r in res.rejects)
    assert "data_exposur" in reasons["b-vocab.yaml"]
    assert "did you mean data_exposure" in reasons["b-vocab.yaml"]
    assert "onset must be an agent action" in reasons["c-onset.yaml"]
    assert "unknown key(s) ['assistant']" in reasons["d-role.yaml"]
    assert "exactly the keys" in reasons["e-noturns.yaml"]
    assert "must equal the file name" in reasons["g-wrongid.yaml"]
    assert "exactly the keys" in reasons["h-list.yaml"]
    assert "not valid YAML" in reasons["i-notyaml.yaml"]


def test_label_and_gold_must_agree(tmp_path: Path) -> None:
    safe = _case("inbox-summary-clean") | {"label": "unsafe"}
    (tmp_path / CASES).mkdir()
    (tmp_path / CASES / "inbox-summary-clean.yaml").write_text(yaml.safe_dump(safe), "utf-8")
    res = SampleSource().extract(tmp_path)
    assert not res.trajectories and "does not agree with the label" in res.rejects[0].reason


def test_missing_corpus_is_a_clear_error(tmp_path: Path) -> None:
    from bench.core.errors import DataError

    with pytest.raises(DataError, match="sample corpus .* not found"):
        SampleSource().extract(tmp_path / "nowhere")


# -------------------------------------------------------------------------- no upstream text


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _own_corpora() -> list[Trajectory]:
    """The sample cases and every valid contrast pair (kept or not): the project's own text."""
    pairs = [Trajectory.from_dict(r) for x in load_all(PAIRS_DIR)[0] for r in x.records]
    return SampleSource().extract(SAMPLE_DIR).trajectories + pairs


def _raw_texts(root: Path) -> Iterator[str]:
    """Every string in the raw datasets: JSON leaves (escapes decoded) and Markdown files."""
    for p in sorted(root.rglob("*")):
        if p.suffix == ".md":
            yield p.read_text(encoding="utf-8", errors="replace")
        elif p.suffix in (".json", ".jsonl"):
            text = p.read_text(encoding="utf-8", errors="replace")
            try:
                yield from _strings(json.loads(text))
            except json.JSONDecodeError:
                for line in text.splitlines():
                    try:
                        yield from _strings(json.loads(line))
                    except json.JSONDecodeError:
                        yield line


def shared_passages(corpus_texts: list[str], raw_texts: Iterator[str]) -> tuple[set[str], int]:
    """The LEAK_LEN-character passages (whitespace normalised, case folded) that occur in both,
    and the number of raw characters scanned. Any shared run of LEAK_LEN characters contains a
    raw (LEAK_LEN/2)-gram starting at a multiple of LEAK_LEN/2, so only those are looked up;
    each hit is then checked against the corpus LEAK_LEN-grams around it."""
    half = LEAK_LEN // 2
    texts = [_norm(s) for s in corpus_texts]
    grams_half = {s[i : i + half] for s in texts for i in range(len(s) - half + 1)}
    grams_full = {s[i : i + LEAK_LEN] for s in texts for i in range(len(s) - LEAK_LEN + 1)}
    leaks: set[str] = set()
    scanned = 0
    for raw in raw_texts:
        r = _norm(raw)
        scanned += len(r)
        for p in range(0, len(r) - half + 1, half):
            if r[p : p + half] not in grams_half:
                continue
            for s in range(max(0, p - half + 1), p + 1):
                w = r[s : s + LEAK_LEN]
                if len(w) == LEAK_LEN and w in grams_full:
                    leaks.add(w)
    return leaks, scanned


def test_shared_passage_detector() -> None:
    """The detector finds a planted passage at every offset, despite whitespace and case."""
    passage = "the quick brown fox told the agent to forward all payslips elsewhere now"
    own = ["Completely original words about " + passage + " and nothing else."]
    for offset in range(0, 31):
        raw = "x" * offset + "Some upstream text: " + passage.upper().replace(" ", "\n ")
        leaks, _ = shared_passages(own, iter([raw]))
        assert leaks, offset
    assert shared_passages(own, iter(["y" * 40 + passage[:59] + "y" * 40]))[0] == set()


def test_no_shared_passage_with_raw_datasets(raw_root: Path) -> None:
    """No 60-character passage of the sample corpus or the pairs occurs anywhere in the raw
    datasets."""
    corpus_texts = [s for t in _own_corpora() for s in _strings(t.to_dict())]
    leaks, scanned = shared_passages(corpus_texts, _raw_texts(raw_root))
    assert scanned > 1_000_000, "the raw datasets look empty"
    assert not leaks, sorted(leaks)[:5]
