"""The layout shows the architecture: commands at the top of ``bench/``, one folder per concept,
folders in one declared order (each imports only the folders before it), no import cycle, own
imports at the top of each file, no test doubles in the wheel."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bench.cli import COMMANDS
from bench.core.paths import PACKAGE, REPO_ROOT
from bench.jobs.submit import wheel_of

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("sources",),
    ("labelling",),
    ("prompts",),
    ("dataset",),
    ("judging",),
    ("stress", "jobs", "metrics"),
    ("report",),
    ("interop",),
)
"""The concept folders in their declared order (docs/FORMATS.md, "Layers"). A folder imports only
folders of an earlier layer; the folders of one layer (stress, jobs, metrics) do not import each
other. The commands at the top of ``bench/`` may import any folder. Prompts sit before the
dataset because a built record carries its rendered auditor prompt and the build checks every
template; the renderer needs nothing but core."""

CONCEPTS = {folder for layer in LAYERS for folder in layer}
"""The concept folders of the package."""

RANK = {folder: i for i, layer in enumerate(LAYERS) for folder in layer}
"""Folder -> its layer's position."""


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> tuple[set[str], list[tuple[int, str]]]:
    """(bench modules imported at module level, (line, module) of those imported elsewhere)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    inner: list[tuple[int, str]] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if not node.module or node.level:
            return []
        out = [node.module]
        # `from bench.x import y` imports the submodule bench.x.y when there is one
        out += [f"{node.module}.{a.name}" for a in node.names]
        return out

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                for name in targets(child):
                    if name in MODULES:
                        (inner.append((child.lineno, name)) if nested else top.add(name))
                continue
            is_def = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, nested or is_def)

    visit(tree, False)
    return top, inner


def test_the_top_of_bench_holds_only_the_commands() -> None:
    files = {p.name for p in PACKAGE.iterdir() if p.is_file() and p.suffix == ".py"}
    assert files == {"__init__.py", "cli.py"} | {f"{c}.py" for c in COMMANDS}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == CONCEPTS


def _folder(module: str) -> str | None:
    """The concept folder of a ``bench.<folder>...`` module; None for the commands and ``bench``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in CONCEPTS else None


def layer_violations(modules: dict[str, Path]) -> list[str]:
    """Every import (module level or inside a function; not under TYPE_CHECKING) from a folder
    into a folder of the same or a later layer, one readable line each."""
    found = []
    for m, f in modules.items():
        here = _folder(m)
        if here is None:
            continue
        top, inner = _imports(f)
        for name in sorted(top | {n for _, n in inner}):
            there = _folder(name)
            if there is None or there == here or RANK[there] < RANK[here]:
                continue
            why = "in a later layer than" if RANK[there] > RANK[here] else "in the same layer as"
            found.append(f"{m} imports {name}: bench/{there}/ is {why} bench/{here}/")
    return sorted(set(found))


def test_folders_import_only_earlier_layers() -> None:
    """The declared order holds between folders (module-level and function-level imports)."""
    found = layer_violations(MODULES)
    order = " -> ".join("/".join(layer) for layer in LAYERS)
    assert not found, (
        f"folders import only earlier layers ({order}; commands on top). Move the shared code "
        "down to the lower folder (often bench/core), or pass it in from the command:\n  "
        + "\n  ".join(found)
    )


def test_the_layer_check_finds_an_upward_import(tmp_path: Path) -> None:
    """A core module importing from judging, and a metrics module importing from jobs, are
    reported; an import downwards is not."""
    up, side, down = tmp_path / "up.py", tmp_path / "side.py", tmp_path / "down.py"
    up.write_text("def f():\n    from bench.judging import specs\n")
    side.write_text("import bench.jobs.plan\n")
    down.write_text("from bench.core import ids\n")
    found = layer_violations(
        {"bench.core.up": up, "bench.metrics.side": side, "bench.report.down": down}
    )
    assert found == [
        "bench.core.up imports bench.judging.specs: bench/judging/ is in a later layer than "
        "bench/core/",
        "bench.core.up imports bench.judging: bench/judging/ is in a later layer than bench/core/",
        "bench.metrics.side imports bench.jobs.plan: bench/jobs/ is in the same layer as "
        "bench/metrics/",
    ]


def test_no_import_cycle() -> None:
    graph = {m: _imports(f)[0] - {m} for m, f in MODULES.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n) :] + [n]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if n not in state:
                dfs(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m)


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    """The walker really follows edges: two files importing each other are reported."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from bench.core import ids\nimport bench.core.jsonl\n")
    b.write_text("def f():\n    from bench.core import ids\n")
    top, inner = _imports(a)
    assert top == {"bench.core", "bench.core.ids", "bench.core.jsonl"}
    assert _imports(b) == (set(), [(2, "bench.core")] + [(2, "bench.core.ids")])


def test_own_imports_sit_at_the_top_of_each_file() -> None:
    """Only the launcher defers an import of the package (it runs before sys.path is fixed)."""
    found = {
        f"{m}:{line}: {name}"
        for m, f in MODULES.items()
        for line, name in _imports(f)[1]
        if m != "bench.cli"
    }
    assert not found, sorted(found)


def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    """Importing each module first (no other module loaded before it) works: no hidden order
    dependence between modules. One interpreter per module would take minutes, so each child
    imports a slice of the modules, each after clearing the package from sys.modules."""
    names = [m for m in MODULES if not m.endswith("__main__")]
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for k in [k for k in sys.modules if k == 'bench' or k.startswith('bench.')]:\n"
        "        del sys.modules[k]\n"
        "    importlib.import_module(name)\n"
    )
    for i in range(0, len(names), 40):
        chunk = names[i : i + 40]
        res = subprocess.run(
            [sys.executable, "-c", code, *chunk],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO_ROOT,
        )
        assert res.returncode == 0, res.stderr[-3000:]


def test_import_bench_loads_no_heavy_sdk() -> None:
    code = (
        "import sys, bench, bench.core.schema, bench.judging.specs, bench.judging.local\n"
        "heavy = [m for m in ('torch', 'transformers', 'gradio', 'openai', 'vllm') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert res.returncode == 0 and res.stdout.strip() == "", res.stderr


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_no_test_doubles(tmp_path: Path) -> None:
    wheel = wheel_of(REPO_ROOT, tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "bench/decide.py" in names and "bench/prompts/templates/auditor.j2" in names
    assert "bench/dataset/templates/card.md.j2" in names
    assert "bench/report/templates/leaderboard.html.j2" in names
    assert any(n.startswith("bench/sources/pins/") for n in names)
    doubles = [n for n in names if "fakehub" in n or "mockserver" in n or n.startswith("tests/")]
    assert doubles == []
