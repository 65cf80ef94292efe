"""``python -m bench.jobs worker ...``: what a Hugging Face Job runs (``plan.job_command``).

Everything else about jobs is under ``python bench/decide.py --on hf-jobs``.
"""

from __future__ import annotations

import argparse
import sys

from bench.core.script import run, setup_logging
from bench.jobs.worker import worker


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.jobs worker ...`` (what a job runs); everything else is under
    ``python bench/decide.py --on hf-jobs``."""
    ap = argparse.ArgumentParser(prog="bench.jobs", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker", help="run one shard of a plan (inside a job)")
    w.add_argument("--results-repo", required=True)
    w.add_argument("--plan", required=True, help="path of plan.json in the results repo")
    w.add_argument("--revision", required=True, help="results repo commit holding the plan")
    w.add_argument("--shard", type=int, required=True)
    args = ap.parse_args(argv)
    setup_logging(quiet=False)
    return worker(args.results_repo, args.plan, args.revision, args.shard)


if __name__ == "__main__":
    sys.exit(run(main))
