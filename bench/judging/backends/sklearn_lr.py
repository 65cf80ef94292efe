"""TF-IDF + logistic regression fitted on the dev split (an offline learned baseline).

Two TF-IDF vectorisers (word 1-2 grams by default), one over the judged action and its thought,
one over the policy and the last few history turns (``bench.judging.backends._features``), stacked side
by side; a multinomial logistic regression on the dev split's gold act. The runner calls
``fit(dev_points)`` before any decision; the test split is never seen in fitting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.core.errors import ConfigError
from bench.core.schema import DecisionPoint
from bench.judging.backends import _features as F
from bench.judging.backends import backend
from bench.judging.protocol import JudgeSpec


class TfidfLR(F.LinearBaseline):
    """TF-IDF features + logistic regression (BatchBackend with ``fit``)."""

    def __init__(self, c: float, max_features: int, ngram_max: int, seed: int) -> None:
        self.c = c
        self.max_features = max_features
        self.ngram_max = ngram_max
        self.seed = seed

    def _vectorizer(self) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer

        return TfidfVectorizer(
            ngram_range=(1, self.ngram_max),
            max_features=self.max_features,
            sublinear_tf=True,
            min_df=1,
        )

    def _x(self, points: Sequence[DecisionPoint]) -> Any:
        from scipy.sparse import hstack

        a = self.vec_action.transform([F.action_text(p) for p in points])
        c = self.vec_context.transform([F.context_text(p) for p in points])
        return hstack([a, c]).tocsr()

    def _prepare(self, pts: Sequence[DecisionPoint]) -> None:
        self.vec_action = self._vectorizer().fit([F.action_text(p) for p in pts])
        self.vec_context = self._vectorizer().fit([F.context_text(p) for p in pts])


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    if float(params.get("C", 1.0)) <= 0:
        raise ConfigError(f"judge {judge_id!r}: params.C must be positive")
    if int(params.get("ngram_max", 2)) < 1 or int(params.get("max_features", 50000)) < 1:
        raise ConfigError(f"judge {judge_id!r}: params.ngram_max and max_features must be >= 1")


@backend(
    "sklearn",
    params={"C": float, "max_features": int, "ngram_max": int, "seed": int},
    generative=False,
    check=check,
    fits_on_dev=True,
)
def make(judge: JudgeSpec) -> TfidfLR:
    """Build the (unfitted) TF-IDF baseline from a judge row."""
    p = judge.params
    return TfidfLR(
        c=float(p.get("C", 1.0)),
        max_features=int(p.get("max_features", 50000)),
        ngram_max=int(p.get("ngram_max", 2)),
        seed=int(p.get("seed", 0)),
    )
