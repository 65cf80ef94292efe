"""The ``bench`` console command, and the launcher behind ``python bench/<command>.py``.

``bench <command> [args]`` runs ``bench/<command>.py``'s ``main``. Each command file starts, after
its docstring and ``from __future__ import annotations``, with the same three lines::

    if __name__ == "__main__" and not __package__:  # python bench/<command>.py
        import cli

        raise SystemExit(cli.launch(__file__))

Run as a file, Python puts ``bench/`` itself first on ``sys.path``, where the package's folders
(``metrics``, ``dataset``, ``jobs``, ...) could shadow installed packages of the same name;
``launch`` replaces that entry with the checkout root, imports the command as ``bench.<command>``
and runs its ``main``, so a command behaves the same however it is started.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

COMMANDS = {
    "extract": "raw trajectories -> canonical trajectories and decision points",
    "label": "propose step labels for every decision point",
    "review": "review proposals one trajectory at a time (or scripted)",
    "pairs": "contrast pairs: validate, show one side, coverage, blind verification packets",
    "build": "proposals + reviews -> a frozen, versioned dataset",
    "decide": "run every judge in judges.toml (locally or on HF Jobs)",
    "leaderboard": "metrics and tables from ground truth + predictions",
    "pipeline": "the whole flow on the embedded sample corpus, offline",
    "proposer_eval": "accuracy of the label proposers against the reviewed decisions",
    "inspect_import": "an Inspect AI eval log of the benchmark task as a predictions file",
}
"""Every command: a module ``bench/<name>.py`` with ``main(argv) -> int``."""


def _run(name: str, argv: list[str]) -> int:
    from bench.core.script import run

    module = importlib.import_module(f"bench.{name}")
    return run(module.main, argv)


def launch(script: str, argv: list[str] | None = None) -> int:
    """``python bench/<command>.py``: put the checkout first on ``sys.path`` (instead of
    ``bench/``) and run the command's main."""
    path = Path(script).resolve()
    root = str(path.parents[1])
    if sys.path and Path(sys.path[0] or ".").resolve() == path.parent:
        sys.path[0] = root
    elif root not in sys.path:
        sys.path.insert(0, root)
    return _run(path.stem, list(sys.argv[1:] if argv is None else argv))


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a command's ``main``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print("usage: bench <command> [args]\n\ncommands:")
        for name, text in COMMANDS.items():
            print(f"  {name:<14} {text}")
        print("\n`bench <command> --help` shows a command's options.")
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        print(f"bench: unknown command {name!r}{hint}", file=sys.stderr)
        return 2
    return _run(name, rest)


if __name__ == "__main__":
    sys.exit(main())
