"""The ``bench`` console command: ``bench <script> [args]`` runs ``bench/<script>.py``'s main."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "extract": "raw trajectories -> canonical trajectories and decision points",
    "label": "propose step labels for every decision point",
    "review": "review proposals one trajectory at a time (or scripted)",
    "build": "proposals + reviews -> a frozen, versioned dataset",
    "decide": "run every judge in judges.toml (locally or on HF Jobs)",
    "leaderboard": "metrics and tables from ground truth + predictions",
    "pipeline": "the whole flow on the embedded sample corpus, offline",
    "proposer_eval": "accuracy of the label proposers against the reviewed decisions",
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a script's ``main``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print("usage: bench <command> [args]\n\ncommands:")
        for name, text in COMMANDS.items():
            print(f"  {name:<14} {text}")
        print("\n`bench <command> --help` shows a command's options.")
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        print(f"bench: unknown command {name!r}{hint}", file=sys.stderr)
        return 2
    from bench._script import run

    module = importlib.import_module(f"bench.{name}")
    return run(module.main, rest)


if __name__ == "__main__":
    sys.exit(main())
