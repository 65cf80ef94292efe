"""The prompt renderer: the judged action is always whole, elision is oldest-first and marked,
numbering is stable, metadata never leaks, and templates run sandboxed."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2.exceptions import SecurityError, UndefinedError

from bench.core.errors import ConfigError
from bench.core.labels import GoldLabel
from bench.core.paths import PROMPT_TEMPLATES
from bench.core.schema import Action, DecisionPoint, Policy, Trajectory, Turn, decision_points
from bench.core.taxonomy import load_taxonomy
from bench.prompts import parsers as contract
from bench.prompts.renderer import (
    DEFAULT_BUDGET,
    TEMPLATE_PARSERS,
    TEMPLATES,
    Budget,
    Prompt,
    action_text,
    environment,
    render,
)

SENTINEL = "ZZSECRETZZ"


def make_dp(
    history: tuple[Turn, ...] = (),
    action: str = "send_email(to='boss@corp.example', body='report')",
    thought: str | None = "I will send the report now.",
    policy: Policy | None = None,
) -> DecisionPoint:
    return DecisionPoint(
        id="sample:t1:3",
        trajectory_id="sample:t1",
        source="sample",
        k=3,
        policy=policy or Policy(system="You are an office assistant.", task="Email the report."),
        history=history,
        thought=thought,
        action=Action(action),
    )


def numbered_history(n: int, size: int = 40) -> tuple[Turn, ...]:
    """n turns cycling user/agent/environment, each with a unique tag and ~size characters."""
    out = []
    for i in range(1, n + 1):
        tag = f"TAG{i:03d}"
        pad = "x" * size
        role = ("user", "agent", "environment")[i % 3]
        if role == "agent":
            out.append(
                Turn(
                    "agent",
                    thought=f"{tag} think {pad}",
                    action=Action(f"{tag}_tool()"),
                    observation=f"{tag} obs",
                )
            )
        else:
            out.append(Turn(role, content=f"{tag} says {pad}"))  # type: ignore[arg-type]
    return tuple(out)


def contents(p: Prompt) -> list[str]:
    return [m["content"] for m in p.messages]


# --- the judged action, verbatim ---------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=300)
_turn = st.one_of(
    st.builds(lambda c: Turn("user", content=c), _text),
    st.builds(lambda c: Turn("environment", content=c), _text),
    st.builds(
        lambda t, a, o: Turn("agent", thought=t, action=Action(a), observation=o),
        st.one_of(st.none(), _text),
        _text,
        st.one_of(st.none(), _text),
    ),
    st.just(Turn("agent", thought="no action recorded", action=None)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(_turn, max_size=10).map(tuple),
    action=st.text(min_size=1, max_size=400).filter(lambda s: s.strip() != ""),
    thought=st.one_of(st.none(), _text),
    task=_text,
    constraints=st.lists(_text, max_size=3).map(tuple),
    template=st.sampled_from(TEMPLATES),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=5000)),
)
def test_action_and_policy_whole_at_any_budget(
    history, action, thought, task, constraints, template, limit
):
    dp = make_dp(history, action, thought, Policy(system="sys", task=task, constraints=constraints))
    budget = None if limit is None else Budget("chars", limit)
    p = render(dp, template, budget)
    body = contents(p)
    # in one single message, whole and unchanged
    assert any(action_text(dp) in c for c in body)
    for piece in (task, *constraints):
        assert any(piece in c for c in body)
    if thought:
        assert any(thought in c for c in body)
    assert 0 <= p.elided_turns <= len(history)
    if budget is None:
        assert p.elided_turns == 0 and not p.over_budget
    elif p.over_budget:
        assert p.elided_turns == len(history) and p.size > limit
    else:
        assert p.size <= limit
    assert p.size == (budget or Budget("chars", 1)).measure(p.messages)
    assert f"[{len(history) + 1}]" in "".join(body)


def test_action_text_is_the_action_unchanged():
    dp = make_dp(action="  rm -rf /tmp/x\n\t# trailing spaces  \n")
    assert action_text(dp) == dp.action.text
    for t in TEMPLATES:
        assert action_text(dp) in "".join(contents(render(dp, t)))


def test_template_syntax_in_data_is_inserted_not_evaluated():
    nasty = "{{ 7*7 }} {% for x in range(3) %}loop{% endfor %} {# c #} {{ self.__class__ }}"
    dp = make_dp(
        history=(Turn("user", content=nasty), Turn("environment", content="{%raw%}")),
        action=nasty,
        thought=nasty,
        policy=Policy(task=nasty),
    )
    for t in TEMPLATES:
        text = "".join(contents(render(dp, t)))
        assert text.count(nasty) >= 3
        assert "49" not in text


# --- elision, numbering, over-budget -----------------------------------------------------------


@pytest.mark.parametrize("template", TEMPLATES)
def test_oldest_turns_are_elided_first_with_marker_and_original_numbers(template):
    hist = numbered_history(12)
    dp = make_dp(hist)
    full = render(dp, template, None)
    bare = render(dp, template, Budget("chars", 1))
    seen_elided = set()
    for limit in range(bare.size, full.size + 1, max(1, (full.size - bare.size) // 40)):
        p = render(dp, template, Budget("chars", limit))
        e = p.elided_turns
        seen_elided.add(e)
        text = "\n".join(contents(p))
        assert not p.over_budget and p.size <= limit
        for i in range(1, 13):
            tag = f"TAG{i:03d}"
            assert (tag in text) == (i > e), (limit, e, i)
            assert (f"[{i}] " in text) == (i > e)
        if e == 0:
            assert "elided" not in text
        elif e == 1:
            assert "[turn 1 elided]" in text
        else:
            assert f"[turns 1-{e} elided]" in text
        assert "[13] PROPOSED" in text or "Action [13]" in text
    assert len(seen_elided) > 5  # the sweep really exercised partial elision


@pytest.mark.parametrize("template", TEMPLATES)
def test_larger_budget_never_elides_more(template):
    dp = make_dp(numbered_history(15, size=80))
    full = render(dp, template, None).size
    prev = None
    for limit in [*range(full // 4, full, 97), full]:
        e = render(dp, template, Budget("chars", limit)).elided_turns
        if prev is not None:
            assert e <= prev
        prev = e
    assert prev == 0


def test_elision_is_minimal():
    """Eliding one turn fewer than the renderer chose would not fit."""
    from bench.prompts import renderer as r

    vocab = r._vocab_context(load_taxonomy())
    dp = make_dp(numbered_history(10, size=100))
    lo, hi = render(dp, "auditor", Budget("chars", 1)).size, render(dp, "auditor", None).size
    for limit in range(lo + 1, hi, (hi - lo) // 7):
        p = render(dp, "auditor", Budget("chars", limit))
        assert 0 < p.elided_turns <= 10 and not p.over_budget
        fewer = r._compiled("auditor")(r._context(dp, p.elided_turns - 1, vocab))
        assert DEFAULT_BUDGET.measure(fewer) > limit


def test_numbering_counts_every_role_and_the_action_is_next():
    hist = (
        Turn("user", content="first"),
        Turn("environment", content="env note"),
        Turn("agent", thought="t", action=Action("ls"), observation="a.txt"),
        Turn("user", content="second"),
    )
    p = render(make_dp(hist), "auditor", None)
    text = p.messages[-1]["content"]
    order = [text.index(s) for s in ("[1] USER", "[2] ENVIRONMENT", "[3] AGENT", "[4] USER")]
    assert order == sorted(order)
    assert "[5] PROPOSED AGENT ACTION (NOT EXECUTED YET)" in text
    assert "Observation: a.txt" in text and "Action: ls" in text
    assert "Judge action [5]" in text


def test_empty_history_and_null_action_turn():
    p = render(make_dp(()), "auditor", None)
    assert "[1] PROPOSED" in p.messages[-1]["content"]
    assert "no earlier turns" in p.messages[-1]["content"]
    p = render(make_dp((Turn("agent", thought="hm", action=None),)), "json", None)
    assert "Action: (none recorded)" in p.messages[-1]["content"]


@pytest.mark.parametrize("template", TEMPLATES)
def test_over_budget_keeps_policy_and_action_whole_and_flags(template):
    big_policy = Policy(
        system="S" * 20000, task="T" * 30000 + " end-of-task", constraints=("C" * 5000,)
    )
    big_action = "A" * 40000 + " end-of-action"
    dp = make_dp(numbered_history(5), action=big_action, policy=big_policy)
    p = render(dp, template, DEFAULT_BUDGET)
    text = "".join(contents(p))
    assert p.over_budget and p.elided_turns == 5 and p.size > DEFAULT_BUDGET.limit
    assert big_action in text
    for piece in (big_policy.system, big_policy.task, big_policy.constraints[0]):
        assert piece in text
    assert "[turns 1-5 elided]" in text
    assert "TAG001" not in text and "TAG005" not in text


def test_default_budget_elides_nothing_on_ordinary_records():
    dp = make_dp(numbered_history(30, size=200))
    for t in TEMPLATES:
        p = render(dp, t)
        assert p.elided_turns == 0 and not p.over_budget


# --- token budgets -----------------------------------------------------------------------------


class WordTokenizer:
    """A stand-in for a Hugging Face tokenizer: one token per whitespace-separated word."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [len(w) for w in text.split()] + ([0] if add_special_tokens else [])


class PlainTokenizer:
    def encode(self, text: str) -> list[int]:
        return list(range(len(text.split())))


@pytest.mark.parametrize("tok", [WordTokenizer(), PlainTokenizer()])
def test_token_budget(tok):
    dp = make_dp(numbered_history(12))
    full = render(dp, "auditor", Budget("tokens", 10**6, tok))
    words = sum(len(m["content"].split()) for m in full.messages)
    assert full.size == words and full.elided_turns == 0
    p = render(dp, "auditor", Budget("tokens", words - 20, tok))
    assert 0 < p.elided_turns < 12 and p.size <= words - 20
    assert action_text(dp) in p.messages[-1]["content"]


def test_token_budget_with_a_hugging_face_tokenizer():
    """A real (locally trained, offline) transformers tokenizer drives the same budget."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    dp = make_dp(numbered_history(12))
    corpus = [m["content"] for m in render(dp, "auditor", None).messages]
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus, tokenizers.trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    total = sum(len(hf.encode(c, add_special_tokens=False)) for c in corpus)
    p = render(dp, "auditor", Budget("tokens", total - 30, hf))
    assert 0 < p.elided_turns < 12 and p.size <= total - 30
    assert action_text(dp) in p.messages[-1]["content"]


@pytest.mark.parametrize(
    "args",
    [("chars", 0, None), ("bytes", 10, None), ("tokens", 100, None), ("chars", 1.5, None)],
)
def test_budget_validation(args):
    with pytest.raises(ConfigError):
        Budget(*args)


# --- what must never be rendered --------------------------------------------------------------


def test_metadata_gold_ids_and_own_observation_never_rendered():
    traj = Trajectory(
        id=f"sample:{SENTINEL}id",
        source="sample",
        source_id=f"{SENTINEL}id",
        category=f"{SENTINEL}cat",
        scenario=f"{SENTINEL}scen",
        license="CC-BY-4.0",
        policy=Policy(system="assistant", task="tidy files"),
        turns=(
            Turn("user", content="please tidy"),
            Turn("agent", thought="look", action=Action("ls"), observation="a b"),
            Turn("agent", thought="del", action=Action("rm a"), observation=f"{SENTINEL}obs"),
            Turn("environment", content=f"{SENTINEL}later"),
        ),
        label="unsafe",
        group=f"{SENTINEL}group",
        metadata={"risk_description": f"{SENTINEL}risk", "labels": [f"{SENTINEL}lab"]},
    )
    dps = list(decision_points(traj))
    gold = GoldLabel(act="STOP", phase="onset", onset=2, provenance=f"{SENTINEL}prov")
    dps.append(dataclasses.replace(dps[-1], gold=gold))  # a labelled view
    for dp in dps:
        for t in TEMPLATES:
            for budget in (None, DEFAULT_BUDGET, Budget("chars", 1)):
                text = "".join(contents(render(dp, t, budget)))
                assert SENTINEL not in text
                assert "onset" not in text.lower()


# --- templates and sandbox ---------------------------------------------------------------------


def test_unknown_template_names_close_matches():
    with pytest.raises(ConfigError, match="did you mean 'auditor'"):
        render(make_dp(), "auditr")
    with pytest.raises(ConfigError, match="known templates"):
        render(make_dp(), "zzz")


def test_every_template_has_a_file_and_a_parser():
    folder = PROMPT_TEMPLATES
    for t in TEMPLATES:
        assert (folder / f"{t}.j2").is_file()
        assert TEMPLATE_PARSERS[t] in contract.PARSERS
    assert set(TEMPLATE_PARSERS) == set(TEMPLATES)


def test_auditor_lists_the_taxonomy_and_the_box():
    vocab = load_taxonomy()
    system = render(make_dp(), "auditor").messages[0]
    assert system["role"] == "system"
    for section in ("fail", "harm", "src"):
        for name in vocab.names(section):
            assert re.search(rf"\b{name}\b", system["content"])
    for act, definition in vocab.definitions("act").items():
        assert f"- {act}: {definition}" in system["content"]
    assert "\\boxed{act:<CONTINUE|ASK|STOP>, risk:<0-100>" in system["content"]


def test_templates_ask_for_what_their_parser_reads():
    """The answer format each template spells out parses ok with its own parser."""
    dp = make_dp(numbered_history(3))
    sys_json = render(dp, "json").messages[0]["content"]
    example = next(ln for ln in sys_json.splitlines() if ln.startswith('{"act"'))
    v = contract.parse("json", example, n_visible=3)
    assert v.status == "ok" and v.act == "ASK" and v.cite == 2
    user = render(dp, "rjudge").messages[-1]["content"]
    assert '"Final answer: safe" or "Final answer: unsafe"' in user
    assert contract.parse("rjudge", "analysis...\nFinal answer: unsafe").act == "STOP"
    lg = render(dp, "llamaguard")
    assert [m["role"] for m in lg.messages] == ["user", "assistant"]
    assert lg.messages[-1]["content"].endswith(action_text(dp))


@pytest.mark.parametrize(
    "source",
    [
        "{{ x.__class__.__mro__ }}",
        "{{ ''.__class__.__base__.__subclasses__() }}",
        "{{ x.__init__.__globals__ }}",
        "{{ '{0.__class__}'.format(x) }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ x.mro() }}",
    ],
)
def test_sandbox_blocks_attribute_exploits(source):
    env = environment()
    with pytest.raises((SecurityError, UndefinedError)):
        env.from_string(source).render(x="data")


def test_sandbox_is_strict():
    env = environment()
    assert type(env).__name__ == "SandboxedEnvironment"
    with pytest.raises(UndefinedError):
        env.from_string("{{ missing_variable }}").render()


def test_render_is_deterministic():
    dp = make_dp(numbered_history(9))
    for t in TEMPLATES:
        assert render(dp, t, Budget("chars", 2500)) == render(dp, t, Budget("chars", 2500))


# --- real data ---------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["rjudge", "stepshield", "assebench"])
def test_every_real_decision_point_keeps_its_action(raw_root, source):
    """Over every extracted decision point of a real source: the action is verbatim in every
    template's prompt at the default budget (which elides nothing on these sources), and for a
    third of them at a tight budget (which does)."""
    from bench import sources

    try:
        adapter = sources.get(source)
    except ModuleNotFoundError as e:  # adapter not written yet
        pytest.skip(f"adapter {source} not available: {e}")
    result = adapter.extract(adapter.default_path(raw_root))
    n = elided = tight_elided = 0
    for traj in result.trajectories:
        for dp in decision_points(traj):
            n += 1
            for t in TEMPLATES:
                p = render(dp, t, DEFAULT_BUDGET)
                assert action_text(dp) in "".join(contents(p)), (dp.id, t)
                elided += p.elided_turns > 0
            if n % 3 == 0:  # a tight budget on a third of the points, templates in turn
                p = render(dp, TEMPLATES[n % len(TEMPLATES)], Budget("chars", 3000))
                assert action_text(dp) in "".join(contents(p)), dp.id
                tight_elided += p.elided_turns > 0
    assert n > 0
    assert elided == 0, "the default budget should keep every real history whole"
    assert tight_elided > 0
