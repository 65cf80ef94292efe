"""Property tests of the canonical schema over generated trajectories (hypothesis).

Each generated turn carries a unique marker in every text field, so "the view holds exactly the
turns before action k" and "never action k's observation" can be checked exactly.
"""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.core.schema import (
    Action,
    DecisionPoint,
    Policy,
    Trajectory,
    Turn,
    decision_points,
    view_text,
)

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<"),
    max_size=12,
)
"""Free text that cannot forge a ``<T n>`` marker."""
_json_scalar = st.none() | st.booleans() | st.integers(-1000, 1000) | _text
_args = st.dictionaries(st.text(min_size=1, max_size=6), _json_scalar, max_size=3)


@st.composite
def _turn(draw: st.DrawFn, n: int) -> Turn:
    tag = f"<T{n}>"  # unique per turn: shows up wherever this turn's text leaks
    role = draw(st.sampled_from(["user", "agent", "agent", "environment"]))
    if role != "agent":
        return Turn(role=role, content=tag + draw(_text))
    null_action = draw(st.integers(0, 9)) == 0  # a rare documented exclusion
    tool = draw(st.none() | st.text(min_size=1, max_size=8))
    action = (
        None
        if null_action
        else Action(
            text=f"{tag}act" + draw(_text), tool=tool, arguments=draw(_args) if tool else None
        )
    )
    return Turn(
        role="agent",
        thought=draw(st.none() | _text.map(lambda s: f"{tag}thought{s}")),
        action=action,
        observation=draw(st.none() | _text.map(lambda s: f"{tag}obs{s}")),
    )


@st.composite
def trajectories(draw: st.DrawFn) -> Trajectory:
    n = draw(st.integers(0, 12))
    turns = tuple(draw(_turn(i)) for i in range(n))
    return Trajectory(
        id="gen:" + str(draw(st.integers(0, 10**6))),
        source="gen",
        source_id="x",
        category=draw(_text),
        scenario=draw(_text),
        license="CC0-1.0",
        policy=Policy(
            system=draw(_text),
            task=draw(_text),
            constraints=tuple(draw(st.lists(_text, max_size=3))),
        ),
        turns=turns,
        label=draw(st.sampled_from([None, "safe", "unsafe"])),
        group=draw(_text),
        metadata=draw(st.dictionaries(st.text(max_size=5), _json_scalar, max_size=3)),
    )


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(trajectories())
def test_view_k_is_exactly_the_turns_before_action_k(t: Trajectory) -> None:
    action_turns = [i for i, x in enumerate(t.turns) if x.role == "agent" and x.action is not None]
    dps = list(decision_points(t))
    assert [dp.k for dp in dps] == list(range(1, len(action_turns) + 1))
    for dp, i in zip(dps, action_turns, strict=True):
        own = t.turns[i]
        assert dp.id == f"{t.id}:{dp.k}" and dp.trajectory_id == t.id
        assert dp.history == t.turns[:i]
        assert dp.action == own.action and dp.thought == own.thought
        assert dp.policy == t.policy
        text = view_text(dp)
        if own.observation is not None:
            assert own.observation not in text
        # nothing from this turn's result or any later turn is visible
        for later in range(i + 1, len(t.turns)):
            assert f"<T{later}>" not in text
        assert f"<T{i}>obs" not in text
        for earlier in range(i):
            x = t.turns[earlier]
            for s in (x.content, x.thought, x.observation, x.action.text if x.action else None):
                if s:
                    assert json.dumps(s, ensure_ascii=False)[1:-1] in text


@SETTINGS
@given(trajectories())
def test_round_trip_and_stable_hash(t: Trajectory) -> None:
    d = t.to_dict()
    back = Trajectory.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d
    assert back.content_hash() == t.content_hash()
    assert Trajectory.from_dict(d).content_hash() == t.content_hash()
    for dp in decision_points(t):
        dd = dp.to_dict()
        again = DecisionPoint.from_dict(json.loads(json.dumps(dd)))
        assert again == dp and again.content_hash() == dp.content_hash()


@SETTINGS
@given(trajectories(), st.data())
def test_hash_changes_with_content(t: Trajectory, data: st.DataObject) -> None:
    other = Trajectory.from_dict({**t.to_dict(), "category": t.category + "!"})
    assert other.content_hash() != t.content_hash()
    if t.turns:
        i = data.draw(st.integers(0, len(t.turns) - 1))
        x = t.turns[i]
        turns = list(t.turns)
        turns[i] = replace(x, content=(x.content or "") + "~")
        edited = replace(t, turns=tuple(turns))
        assert edited.content_hash() != t.content_hash()
