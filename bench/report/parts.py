"""Which pieces of the report's JSON documents are written to files of their own.

``leaderboard.json`` keeps the headline, the per-judge rows and the definitions, and
``leaderboard_rows.json`` the boards the Space shows at first paint (``all`` and ``lite``). What
a reader needs only when a tab opens (breakdowns, robustness, pairwise statistics, the per-group
boards) goes to ``parts/*.json``. ``PARTS`` is the one registry of those cuts: ``render_all``
writes them, ``--check`` and the Hub upload read ``OUTPUT_TEXTS`` (which lists them), and the
Space learns where each piece is from the ``parts`` (and ``board_index``) keys of the documents,
so it needs no copy of this table.

A part file is its document restricted to the paths it took (``{"by_category": {...}}``,
``{"boards": {"category:x": {...}}}``, ``{"judges": [{"id": ..., "curves": ...}]}``): the moved
JSON is byte for byte what the document held, and ``merge`` puts a document back together
(``read_whole`` from a written folder). Layouts in docs/metrics.md, "The JSON layouts". All
but ``read_whole`` are pure.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

Doc = Literal["leaderboard.json", "leaderboard_rows.json"]
"""The two JSON documents parts are cut from."""
LEADERBOARD: Final = "leaderboard.json"
"""The report document (``bench.report.report.build_report``)."""
ROWS: Final = "leaderboard_rows.json"
"""The table-ready rows document (``bench.report.rows.build_rows``)."""

Cut = Literal["key", "field", "boards"]
"""How a part is cut from its document: a whole top-level ``key``; one ``field`` of every entry
of the list under ``key`` (matched back by ``id``); the ``boards`` of one kind (keys
``<kind>:<group>`` of the dict under ``key``)."""


@dataclass(frozen=True)
class Part:
    """One piece of a document written to a file of its own."""

    doc: Doc
    """The document it is cut from."""
    key: str
    """The document's top-level key it is cut from."""
    path: str
    """Its file, relative to the output folder (forward slashes)."""
    cut: Cut = "key"
    """How it is cut (``Cut``)."""
    sub: str = ""
    """The entry field (cut ``field``) or the board kind (cut ``boards``); '' for ``key``."""

    @property
    def name(self) -> str:
        """Its name in the document's ``parts`` index: the key, or ``<key>.<sub>``."""
        return self.key if self.cut == "key" else f"{self.key}.{self.sub}"


def _key(key: str, doc: Doc = LEADERBOARD) -> Part:
    """A whole top-level key of ``doc`` in ``parts/<key>.json`` (``parts/rows_<key>.json``)."""
    return Part(doc, key, f"parts/{key}.json" if doc == LEADERBOARD else f"parts/rows_{key}.json")


JUDGE_FIELDS = ("ranks", "pooled", "above_shortcuts", "curves")
"""Fields of every ``judges[]`` entry kept apart (``parts/<field>.json``): the ranks by the
other rank metrics, the pooled figures, the margins over the shortcuts and the plot curves.
The Space reads these from leaderboard_rows.json's boards; the entry keeps the headline."""

PARTS: tuple[Part, ...] = (
    *(_key(k) for k in ("by_source", "by_category", "by_subset", "by_level", "diagnostic")),
    *(_key(k) for k in ("unreviewed", "twins", "pairs", "lite", "robustness")),
    *(Part(LEADERBOARD, "judges", f"parts/{f}.json", "field", f) for f in JUDGE_FIELDS),
    *(Part(ROWS, "boards", f"parts/rows_{k}.json", "boards", k) for k in ("source", "category")),
    *(Part(ROWS, "boards", f"parts/rows_{k}.json", "boards", k) for k in ("subset", "level")),
    _key("pairs", ROWS),
)
"""Every cut, in writing order. To move another piece out, add a row: ``_key("<report key>")``
for a top-level key of leaderboard.json (``parts/<key>.json``), ``_key("<key>", ROWS)`` for one
of leaderboard_rows.json. A key listed here that a report lacks is skipped (no file)."""

PART_FILES: tuple[str, ...] = tuple(p.path for p in PARTS)
"""Every part file, relative to the output folder."""


def _check_registry(parts: Sequence[Part]) -> None:
    paths = [p.path for p in parts]
    names = [(p.doc, p.name) for p in parts]
    if len(set(paths)) != len(paths) or len(set(names)) != len(names):
        raise ValueError("bench/report/parts.py: two parts share a file or a name; rename one")


_check_registry(PARTS)


def _take(doc: Mapping[str, Any], part: Part) -> Any:
    """The JSON value ``part`` takes from ``doc`` (its file's only key's value), or None."""
    if part.key not in doc:
        return None
    value = doc[part.key]
    if part.cut == "key":
        return value
    if part.cut == "field":
        return [{"id": e["id"], part.sub: e[part.sub]} for e in value if part.sub in e]
    prefix = f"{part.sub}:"
    return {k: b for k, b in value.items() if k.startswith(prefix)}


def split(
    doc: Mapping[str, Any], which: str, parts: Sequence[Part] = PARTS
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the document without its parts, {part path: part document}) for document ``which``.
    The head gains ``parts`` {part name: path} and, when boards were cut, ``board_index``
    {board key: path}; a part whose key the document lacks is left out. Pure: ``doc`` is not
    changed."""
    head = dict(doc)
    files: dict[str, dict[str, Any]] = {}
    index: dict[str, str] = {}
    board_index: dict[str, str] = {}
    for part in parts:
        if part.doc != which:
            continue
        taken = _take(head, part)
        if taken is None:
            continue
        files[part.path] = {part.key: taken}
        index[part.name] = part.path
        if part.cut == "key":
            del head[part.key]
        elif part.cut == "field":
            head[part.key] = [{k: v for k, v in e.items() if k != part.sub} for e in head[part.key]]
        else:
            head[part.key] = {k: b for k, b in head[part.key].items() if k not in taken}
            board_index.update(dict.fromkeys(taken, part.path))
    if index:
        head["parts"] = index
    if board_index:
        head["board_index"] = board_index
    return head, files


def merge(head: Mapping[str, Any], parts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The whole document again from its head and its part documents ({path: part document});
    without the ``parts`` and ``board_index`` keys ``split`` added and the manifest ``files``.
    The inverse of ``split`` up to key order."""
    added = ("parts", "board_index", "files")
    doc = copy.deepcopy({k: v for k, v in head.items() if k not in added})
    for part_doc in parts.values():
        for key, value in part_doc.items():
            if key not in doc:
                doc[key] = copy.deepcopy(value)
            elif isinstance(doc[key], dict):
                doc[key] = {**doc[key], **value}
            else:
                by_id = {e["id"]: {k: v for k, v in e.items() if k != "id"} for e in value}
                doc[key] = [{**e, **by_id.get(e["id"], {})} for e in doc[key]]
    return doc


def read_whole(folder: Path, which: Doc = LEADERBOARD) -> dict[str, Any]:
    """The whole document ``which`` as leaderboard.py wrote it under ``folder``: its head
    merged with every part file its ``parts`` index names (for readers that want every key,
    as the document was before it was cut)."""
    head = json.loads((folder / which).read_text(encoding="utf-8"))
    paths = sorted(set((head.get("parts") or {}).values()))
    return merge(head, {p: json.loads((folder / p).read_text(encoding="utf-8")) for p in paths})
