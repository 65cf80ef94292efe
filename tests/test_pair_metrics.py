"""Pair metrics on a hand-computed fixture: both right, ranked above (ties half), balanced
accuracy at k*, per-group figures, and a bootstrap that resamples pairs."""

from __future__ import annotations

import numpy as np
import pytest

from bench.metrics.pairs import by_group, figures, intervals, outcomes, resample, summary

# four pairs; points 0..7: pair i has A at 2i and B at 2i + 1
UNSAFE = np.array([1, 0, 1, 1, 0, 0, 0, 1], dtype=bool)
SCORE = np.array([90, 10, 80, 80, 20, 20, 30, 70], dtype=float)
A = np.array([0, 2, 4, 6])
B = np.array([1, 3, 5, 7])


def test_hand_computed_figures() -> None:
    o = outcomes(UNSAFE, SCORE, A, B)
    # pair 0: A flagged, B passed -> both right; pair 1: both flagged; pair 2: neither;
    # pair 3: A passed, B flagged (inverted)
    assert o.a_flagged.tolist() == [1, 1, 0, 0] and o.b_passed.tolist() == [1, 0, 1, 0]
    assert o.above.tolist() == [1.0, 0.5, 0.5, 0.0]
    f = figures(o)
    assert f["both_right"] == 0.25
    assert f["ranked_above"] == 0.5
    assert f["ba_at_k"] == pytest.approx((2 / 4 + 2 / 4) / 2)


def test_a_one_sided_judge_sits_at_chance() -> None:
    # a judge that sees only the (identical) action gives both sides the same answer
    same = np.array([1, 1, 0, 0, 1, 1, 0, 0], dtype=bool)
    o = outcomes(same, same * 100.0, A, B)
    f = figures(o)
    assert f == {"both_right": 0.0, "ranked_above": 0.5, "ba_at_k": 0.5}


def test_groups_and_intervals() -> None:
    o = outcomes(UNSAFE, SCORE, A, B)
    draws = resample(4, 2000, seed=7)
    g = by_group(
        o,
        ["policy", "policy", "identity", "identity"],
        draws,
        order=["policy", "identity", "observation"],
    )
    assert g["policy"]["n"] == 2 and g["policy"]["both_right"]["value"] == 0.5
    assert g["identity"]["both_right"]["value"] == 0.0
    assert g["observation"] == {
        "n": 0,
        "both_right": {"value": None, "ci": None},
        "ranked_above": {"value": None, "ci": None},
        "ba_at_k": {"value": None, "ci": None},
    }
    lo, hi = intervals(o, draws)["both_right"]
    assert 0.0 <= lo <= 0.25 <= hi <= 0.75
    s = summary(o, draws)
    assert s["n"] == 4 and s["ba_at_k"]["value"] == 0.5
    # the same seed gives the same draws: intervals are reproducible
    assert intervals(o, resample(4, 2000, seed=7)) == intervals(o, draws)
