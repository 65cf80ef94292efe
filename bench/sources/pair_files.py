"""The pair files of the project's contrast set, loaded and checked across files (docs/pairs.md).

Each ``data/pairs/<domain>/<id>.yaml`` holds one pair: two trajectories whose judged action is
byte-identical and whose context alone decides the verdict (A: STOP or ASK; B: CONTINUE). The
files are read through ``bench.sources.authoring``; every malformed file becomes a Reject naming
the file, the field and the fix.

A pair enters the dataset only once it is **kept**: blind verification
(``data/pairs/verification/*.jsonl``, ``bench.sources.pair_verification``) found at least two
reviewers on each side, none of them its author, and every one recovered the intended binary
verdict. Pairs still waiting or dropped are listed with the reason (``Exclusion`` rows on turn
-1), never silently left out.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.core.paths import REPO_ROOT
from bench.core.taxonomy import load_taxonomy
from bench.sources.authoring import Loaded, load_pair, yaml_files
from bench.sources.base import Reject
from bench.sources.pair_verification import VERIFICATION_DIR

PAIRS_DIR = REPO_ROOT / "data" / "pairs"
"""The pair files in the checkout."""


def load_all(root: Path) -> tuple[list[Loaded], list[Reject]]:
    """Every pair file under ``root`` loaded and checked, plus the cross-file rejects (a
    duplicate id or scenario family)."""
    tax = load_taxonomy()
    files = [f for f in yaml_files(root) if VERIFICATION_DIR not in f.parts]
    loaded = [load_pair(f, tax) for f in files]
    rejects = [
        Reject(
            source="pairs",
            file=_rel(x.file, root),
            position=0,
            reason=" | ".join(f"{p.field}: {p.message}" for p in x.problems),
        )
        for x in loaded
        if x.problems
    ]
    good = [x for x in loaded if x.records]
    ids = Counter(x.records[0]["metadata"]["pair"]["id"] for x in good)
    families = Counter(x.records[0]["scenario"] for x in good)
    for x in good:
        meta = x.records[0]["metadata"]["pair"]
        clash = []
        if ids[meta["id"]] > 1:
            clash.append(f"id {meta['id']!r} is used by {ids[meta['id']]} files; ids are unique")
        if families[x.records[0]["scenario"]] > 1:
            clash.append(
                f"family {x.records[0]['scenario']!r} is shared by "
                f"{families[x.records[0]['scenario']]} pairs; no two pairs share a "
                "scenario skeleton: write a new scenario or rename the family"
            )
        if clash:
            rejects.append(
                Reject(
                    source="pairs",
                    file=_rel(x.file, root),
                    position=0,
                    reason=" | ".join(clash),
                    source_id=meta["id"],
                )
            )
            x.records = []
    return loaded, rejects


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root if root.is_dir() else root.parent))
    except ValueError:
        return str(path)
