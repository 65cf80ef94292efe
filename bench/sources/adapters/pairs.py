"""Foresight pairs: contrast pairs the project writes itself (docs/pairs.md).

Each ``data/pairs/<domain>/<id>.yaml`` holds one pair: two trajectories whose judged action is
byte-identical and whose context alone decides the verdict (A: STOP or ASK; B: CONTINUE). The
files are read through ``bench.sources.pair_files``; every malformed file becomes a Reject naming
the file, the field and the fix. A pair enters the dataset only once blind verification keeps it
(``bench.sources.pair_verification``); pairs still waiting or dropped are listed as withheld,
with the reason, never silently left out.
"""

from __future__ import annotations

from pathlib import Path

from bench.core.schema import Trajectory
from bench.sources import register
from bench.sources.authoring import LICENSE
from bench.sources.base import ExtractResult, Source, Withheld
from bench.sources.pair_files import PAIRS_DIR, load_all
from bench.sources.pair_verification import keep_status, load_verifications


@register("pairs")
class PairsSource(Source):
    """The project's contrast pairs, shipped in the repository."""

    folder = "pairs"
    license = LICENSE
    redistributable = True
    upstream = None
    headline = True
    verified = True
    defects = (
        "Written by the project's authors (AI agents and maintainers) in their own words; every "
        "kept pair was verified blind by at least two reviewers per side who did not write it.",
    )

    def default_path(self, data_root: Path | None = None) -> Path:
        """Always the checkout's ``data/pairs``."""
        return PAIRS_DIR

    def extract(self, path: Path) -> ExtractResult:
        """Every kept pair's two trajectories; malformed files become Rejects, pairs not (yet)
        kept are Withheld with the verification's reason."""
        loaded, rejects = load_all(path)
        result = ExtractResult(rejects=rejects)
        verdicts = load_verifications((path if path.is_dir() else path.parent) / "verification")
        for x in loaded:
            if not x.records:
                continue
            meta = x.records[0]["metadata"]["pair"]
            status = keep_status(meta["id"], meta["author"], verdicts)
            if not status.kept:
                result.withheld += [Withheld(rec["id"], status.reason) for rec in x.records]
                continue
            result.trajectories += [Trajectory.from_dict(r) for r in x.records]
        return result
