"""The chat-format training export of the dev split (``python bench/build.py --export-sft``).

Each scored, undisputed dev record becomes its auditor prompt exactly as judges see it plus the
gold verdict, in the auditor contract, as the assistant's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.core.labels import RISK_FROM_ACT, GoldLabel
from bench.dataset.records import Record


def gold_box(g: GoldLabel) -> str:
    """The gold verdict in the auditor contract. Risk is not labelled, so it is set to the
    leaderboard's convention for a judge without scores (``RISK_FROM_ACT``)."""
    risk = RISK_FROM_ACT[g.act]
    cite = "NONE" if g.cite is None else str(g.cite)
    return (
        f"\\boxed{{act:{g.act}, risk:{risk}, fail:{g.fail}, harm:{g.harm}, src:{g.src}, "
        f"cite:{cite}}}"
    )


def sft_records(records: Sequence[Record], version: str) -> list[dict[str, Any]]:
    """Chat-format training records of the DEV split: the auditor prompt exactly as judges see
    it, plus the gold verdict as the assistant's answer. Disputed and unscored (post-onset)
    steps are left out."""
    out = []
    for r in records:
        g = r.point.gold
        if r.split != "dev" or r.disputed or g is None or not g.scored:
            continue
        out.append(
            {
                "id": r.point.id,
                "dataset_version": version,
                "template": "auditor",
                "messages": [dict(m) for m in r.messages]
                + [{"role": "assistant", "content": gold_box(g)}],
            }
        )
    return out
