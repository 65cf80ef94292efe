"""The docs stay true: every repository path and every ``bench.`` module (or name in one) that
README.md and docs/*.md mention exists.

Paths are read from inline code and code blocks: a token that starts with one of the repository's
top-level folders or files and a slash (``bench/core/paths.py``, ``data/taxonomy.toml``). Tokens
with a placeholder (``<version>``, ``*``, ``{...}``, ``...``) name a pattern, not a file, and are
skipped, and so are the git-ignored folders the commands write (``work/``, ``data/build/``).
A ``bench.x.y`` name must import as a module, or be a name defined in the longest module it
starts with (``bench.core.schema.decision_points``)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from bench.core.paths import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
"""The documents checked."""

GENERATED = ("work/", "data/build/", "leaderboards/predictions/", "leaderboards/plots/")
"""Prefixes of paths the commands write (git-ignored or regenerated): named as destinations."""

ALLOWED: frozenset[str] = frozenset()
"""Paths or names a document may mention although they do not exist (none today)."""

_CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)
_PLACEHOLDER = re.compile(r"[<>*{}]|\.\.\.|\$")
_MODULE = re.compile(r"(?<![\w./-])bench(?:\.[A-Za-z_]\w*)+")


def _code_spans(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _CODE.finditer(text)]


def _roots() -> tuple[str, ...]:
    return tuple(
        p.name for p in REPO_ROOT.iterdir() if not p.name.startswith(".") and p.name != "work"
    )


def repo_paths(text: str, roots: tuple[str, ...]) -> set[str]:
    """The repository paths a document names in its code."""
    out = set()
    for span in _code_spans(text):
        for token in re.split(r"[\s`'\"(),;=|\[\]]+", span):
            token = token.rstrip(".:").split(":")[0]
            first = token.split("/")[0]
            if "/" not in token or first not in roots or _PLACEHOLDER.search(token):
                continue
            if not (token + "/").startswith(GENERATED):
                out.add(token)
    return out


def bench_names(text: str) -> set[str]:
    """Every ``bench.x.y`` a document names, in code or prose."""
    return {m.group(0).rstrip(".") for m in _MODULE.finditer(text)}


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def exists(path: str) -> bool:
    """A file or folder of the checkout, or ``folder/module.name``: a name in a module file."""
    if (REPO_ROOT / path.rstrip("/")).exists():
        return True
    module, _, name = path.rpartition(".")
    return name.isidentifier() and (REPO_ROOT / f"{module}.py").is_file()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_a_document_names_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = sorted(p for p in repo_paths(text, _roots()) if p not in ALLOWED and not exists(p))
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_bench_name_a_document_uses_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = sorted(n for n in bench_names(text) if n not in ALLOWED and not _resolves(n))
    assert not missing, f"{doc.name} names bench modules or names that do not exist: {missing}"


def test_the_readers_find_paths_and_names() -> None:
    """The extraction itself: code spans and blocks are read, placeholders and generated
    folders skipped, prose ignored for paths."""
    text = (
        "See `bench/core/paths.py:12` and bench/not/code.py.\n"
        "```bash\npython bench/build.py --out data/build/x\ncat data/labels/<source>.jsonl\n```\n"
        "Uses bench.core.schema.decision_points and `bench.nope`."
    )
    roots = ("bench", "data")
    assert repo_paths(text, roots) == {"bench/core/paths.py", "bench/build.py"}
    assert exists("bench/core/paths.py") and exists("tests/_space_support.load_space")
    assert not exists("bench/backends/http1.py")
    assert bench_names(text) == {"bench.core.schema.decision_points", "bench.nope"}
    assert _resolves("bench.core.schema.decision_points")
    assert not _resolves("bench.nope") and not _resolves("bench.core.schema.nothing_here")
