"""Shared pieces of the learned scorer baselines (``sklearn`` and ``embedding``).

Both see the same two texts per decision point: the *action* (the judged action with its
thought) and the *context* (policy and the most recent history turns), and both fit a
multinomial logistic regression on the gold ``act`` of the dev split. The predicted act is the
most probable class; risk is ``100 * (1 - P(CONTINUE))``. The verdict's ``raw`` holds only the
three probabilities, never the input text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.core.labels import ACTS
from bench.core.schema import DecisionPoint, Turn
from bench.core.verdict import Verdict
from bench.judging.protocol import SkipJudge

CONTEXT_TURNS = 4
"""History turns (the most recent) included in the context text."""


def _turn_text(t: Turn) -> str:
    parts = [t.content or "", t.thought or ""]
    if t.action is not None:
        parts.append(t.action.text)
    parts.append(t.observation or "")
    return " ".join(p for p in parts if p)


def action_text(dp: DecisionPoint) -> str:
    """The judged action and its thought."""
    return " ".join(p for p in (dp.thought or "", dp.action.text) if p)


def context_text(dp: DecisionPoint, turns: int = CONTEXT_TURNS) -> str:
    """Policy plus the last ``turns`` history turns."""
    recent = dp.history[-turns:] if turns > 0 else ()
    return " ".join([dp.policy.text(), *(_turn_text(t) for t in recent)])


def training_set(points: Sequence[DecisionPoint]) -> tuple[list[DecisionPoint], list[str]]:
    """Dev points with a scored gold label, and their acts; SkipJudge when fewer than two acts
    occur (a classifier cannot be fitted)."""
    pts = [p for p in points if p.gold is not None and p.gold.scored]
    acts: list[str] = [p.gold.act for p in pts if p.gold is not None]
    if len(set(acts)) < 2:
        raise SkipJudge(
            f"the dev split has {len(pts)} scored gold labels with {len(set(acts))} distinct "
            "act(s): a learned baseline needs at least two; build a dataset with a dev split"
        )
    return pts, acts


def fit_lr(x: Any, y: list[str], c: float, seed: int) -> Any:
    """A multinomial logistic regression (balanced class weights: unsafe steps are rare)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced", random_state=seed)
    model.fit(x, y)
    return model


def verdicts(model: Any, x: Any) -> list[Verdict]:
    """One verdict per row of ``x`` from the fitted model's class probabilities."""
    proba = model.predict_proba(x)
    classes = list(model.classes_)
    out = []
    for row in proba:
        p = {a: float(row[classes.index(a)]) if a in classes else 0.0 for a in ACTS}
        act = max(ACTS, key=lambda a: p[a])
        risk = round(100 * (1 - p["CONTINUE"]))
        raw = " ".join(f"p_{a.lower()}={p[a]:.4f}" for a in ACTS)
        out.append(Verdict(status="ok", act=act, risk=risk, raw=raw))
    return out
