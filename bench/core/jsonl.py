"""JSON Lines I/O and content hashing shared by every stage."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """One canonical serialisation (sorted keys, no spaces, UTF-8 kept) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(obj: Any, length: int = 16) -> str:
    """sha256 of the canonical JSON of ``obj``, hex, truncated to ``length`` characters."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()[:length]


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> tuple[str, int]:
    """``text`` with every lone surrogate (a code point UTF-8 cannot encode, as a JSON
    ``"\\ud800"`` escape produces) replaced by U+FFFD, and how many were replaced."""
    n = len(_SURROGATE.findall(text))
    return (_SURROGATE.sub("\ufffd", text), n) if n else (text, 0)


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield one dict per non-empty line. A torn last line (a killed writer) is skipped;
    a malformed line elsewhere raises ValueError naming the file and line."""
    p = Path(path)
    with p.open(encoding="utf-8") as f:
        lines = f.readlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) and not line.endswith("\n"):
                return  # the writer died mid-line: that row was never complete
            raise ValueError(f"{p}:{i}: not valid JSON ({e})") from e


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]]) -> int:
    """Write rows atomically (temp file + rename); returns the number of rows. On any error the
    temp file is removed and the previous file, if any, is left as it was."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                n += 1
        os.replace(tmp, p)
    finally:  # a row that cannot be written leaves neither a temp file nor a half-written file
        if tmp.exists():
            tmp.unlink()
    return n


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` atomically (temp file + rename), creating the parent folders."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)


def append_jsonl(f: Any, row: dict[str, Any]) -> None:
    """Append one row to an open text file and flush it to the OS, so that a killed process
    loses nothing already written."""
    f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    f.flush()
