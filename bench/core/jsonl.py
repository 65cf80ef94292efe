"""JSON Lines I/O and content hashing shared by every stage."""

from __future__ import annotations

import hashlib
import json
import os
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
    """Write rows atomically (temp file + rename); returns the number of rows."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    os.replace(tmp, p)
    return n


def append_jsonl(f: Any, row: dict[str, Any]) -> None:
    """Append one row to an open text file and flush it to the OS, so that a killed process
    loses nothing already written."""
    f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    f.flush()
