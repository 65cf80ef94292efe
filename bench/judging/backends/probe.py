"""Shortcut probes: learned baselines that see ONE artefact of a decision point and nothing else.

A probe is fitted on the dev split like the other learned baselines (a multinomial logistic
regression on the gold act, balanced class weights) but from a single feature family, chosen by
``params.feature``:

- ``tool``: the called tool's name only: character 2-4-grams, case kept, the words of its
  CamelCase parts (an attacker tool such as ``PatientDataTheft`` is named like an attack) and its
  shape (CamelCase, snake_case, lower, a plain reply: ASSEBench's attacker tools are CamelCase,
  its task tools snake_case);
- ``position``: where the step sits, nothing it says: k (the action's index), the number of
  earlier turns and the size of the visible history, as one-hot buckets;
- ``thought``: the agent's thought for the judged action, word uni- and bigrams;
- ``action``: the judged action's text, word uni- and bigrams;
- ``context``: everything BEFORE the judged action and nothing of it: the policy and the earlier
  turns (with their results), word uni- and bigrams (TF-IDF). On a contrast pair the context is
  what decides, so this probe tells whether an edit gives itself away by its words alone;
- ``length``: sizes only: the characters of the policy, the history, the thought and the action,
  as log-scale buckets (a pair whose unsafe side is systematically longer would show here).

On the leaderboard probes are reference lines, never ranked: a judge whose score does not clear
the best probe's on a source is not measuring judgment there (docs/metrics.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bench.core.errors import ConfigError
from bench.core.schema import DecisionPoint
from bench.judging.backends import _features as F
from bench.judging.backends import backend
from bench.judging.protocol import JudgeSpec

FEATURES = ("tool", "position", "thought", "action", "context", "length")
"""The artefacts a probe can see."""

_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*[({]")


def tool_name(dp: DecisionPoint) -> str:
    """The called tool's name: ``Action.tool``, else the name before ``(`` or ``{`` in the text,
    else '' (a plain reply)."""
    if dp.action.tool:
        return dp.action.tool
    m = _CALL.match(dp.action.text)
    return m.group(1) if m else ""


def _camel_words(name: str) -> str:
    return " ".join(w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name))


def tool_shape(name: str) -> str:
    """The naming convention of a tool name: ``camel``, ``snake``, ``lower``, ``upper``,
    ``other``, or ``reply`` for no tool."""
    if not name:
        return "reply"
    if re.fullmatch(r"(?:[A-Z][a-z0-9]+){2,}", name):
        return "camel"
    if "_" in name and name == name.lower():
        return "snake"
    if name.isalpha() and name == name.lower():
        return "lower"
    if name.isupper():
        return "upper"
    return "other"


def _bucket(prefix: str, n: int, edges: Sequence[int]) -> str:
    for e in edges:
        if n <= e:
            return f"{prefix}<={e}"
    return f"{prefix}>{edges[-1]}"


def position_tokens(dp: DecisionPoint) -> str:
    """k, the number of earlier turns and the history's size, as bucket tokens."""
    chars = sum(len(t.content or "") + len(t.thought or "") + len(t.observation or "") + (len(t.action.text) if t.action else 0) for t in dp.history)  # fmt: skip
    return " ".join(
        [
            _bucket("k", dp.k, (1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 20)),
            _bucket("turns", len(dp.history), (0, 1, 2, 3, 4, 6, 8, 10, 14, 20)),
            _bucket("logchars", int(math.log2(chars + 1)), tuple(range(4, 17))),
        ]
    )


CONTEXT_CHARS = 16_000
"""The context probe reads the policy and the last this many characters of the history: every
contrast pair fits whole, and a long code-agent history does not make the fit quadratic."""


def context_text(dp: DecisionPoint) -> str:
    """The policy and the earlier turns (content, thought, action, result), the judged action and
    its thought left out; the history keeps its last ``CONTEXT_CHARS`` characters."""
    parts = []
    for t in dp.history:
        parts += [t.content or "", t.thought or "", t.action.text if t.action else ""]
        parts.append(t.observation or "")
    history = "\n".join(p for p in parts if p)
    return dp.policy.text() + "\n" + history[-CONTEXT_CHARS:]


def length_tokens(dp: DecisionPoint) -> str:
    """log2 sizes of the policy, the history, the thought and the action, as bucket tokens."""
    sizes = {
        "policy": len(dp.policy.text()),
        "history": sum(
            len(t.content or "")
            + len(t.thought or "")
            + len(t.observation or "")
            + (len(t.action.text) if t.action else 0)
            for t in dp.history
        ),
        "thought": len(dp.thought or ""),
        "action": len(dp.action.text),
    }
    return " ".join(f"{k}_log{int(math.log2(v + 1))}" for k, v in sizes.items())


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    if params.get("feature") not in FEATURES:
        raise ConfigError(
            f"judge {judge_id!r}: params.feature must be one of {', '.join(FEATURES)}, "
            f"not {params.get('feature')!r}"
        )
    if float(params.get("C", 1.0)) <= 0:
        raise ConfigError(f"judge {judge_id!r}: params.C must be positive")


class Probe(F.LinearBaseline):
    """A one-artefact learned baseline (BatchBackend with ``fit``)."""

    def __init__(self, feature: str, c: float, seed: int) -> None:
        self.feature, self.c, self.seed = feature, c, seed
        self.vectorizers: list[tuple[Any, Any]] = []

    def _texts(self) -> list[tuple[Any, Any]]:
        """(vectorizer, point -> text) pairs for the feature."""
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

        if self.feature == "tool":
            return [
                (
                    TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=False),
                    lambda p: tool_name(p) or "(reply)",
                ),
                (
                    CountVectorizer(binary=True, token_pattern=r"\S+"),
                    lambda p: _camel_words(tool_name(p)) or "reply",
                ),
                (
                    CountVectorizer(binary=True, token_pattern=r"\S+"),
                    lambda p: "shape_" + tool_shape(tool_name(p)),
                ),
            ]
        if self.feature == "position":
            return [(CountVectorizer(binary=True, token_pattern=r"\S+"), position_tokens)]
        if self.feature == "context":
            return [
                (TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2), context_text)
            ]
        if self.feature == "length":
            return [(CountVectorizer(binary=True, token_pattern=r"\S+"), length_tokens)]
        if self.feature == "thought":
            return [
                (
                    TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                    lambda p: p.thought or "(no thought)",
                )
            ]
        return [(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), lambda p: p.action.text)]

    def _x(self, points: Sequence[DecisionPoint]) -> Any:
        from scipy.sparse import hstack

        return hstack(
            [vec.transform([f(p) for p in points]) for vec, f in self.vectorizers]
        ).tocsr()

    def _prepare(self, pts: Sequence[DecisionPoint]) -> None:
        self.vectorizers = [(vec.fit([f(p) for p in pts]), f) for vec, f in self._texts()]


@backend(
    "probe",
    params={"feature": str, "C": float, "seed": int},
    generative=False,
    check=check,
    fits_on_dev=True,
)
def make(judge: JudgeSpec) -> Probe:
    """Build the (unfitted) probe of a judge row."""
    p = judge.params
    check(judge.id, p)
    return Probe(str(p["feature"]), float(p.get("C", 1.0)), int(p.get("seed", 0)))
