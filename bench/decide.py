"""Run the judges in judges.toml over a built dataset, caching every decision.

    python bench/decide.py [--judge ID ...] [--split test] [--source S] [--limit N] [--force]
                           [--quiet] [--judges PATH] [--out DIR] [--version V] [--check]

Each judge writes ``<out>/<judge>/<dataset_version>/<config_hash>.jsonl`` (docs/FORMATS.md),
one line per decision appended and flushed as it completes. A rerun skips ids already answered
in that file (same config hash, same dataset version) and retries errored ones; a changed config
gets a new file. A judge whose optional dependency, weights or key is missing is skipped with
the reason in the summary. ``--check`` validates judges.toml and runs nothing.

Judges never see gold labels: decision points are passed without ``gold``; only learned
baselines get the *dev* split's gold, through ``fit``, before they answer anything.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as `python bench/decide.py`: the repo root, not bench/, first
    import pathlib
    import sys

    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Literal  # noqa: E402

import bench  # noqa: E402
from bench import judges as judges_mod  # noqa: E402
from bench import predictions, runner  # noqa: E402
from bench._script import run  # noqa: E402
from bench.backends.base import JudgeInput, SkipJudge  # noqa: E402
from bench.errors import BenchError  # noqa: E402
from bench.jsonl import content_hash  # noqa: E402
from bench.paths import REPO_ROOT  # noqa: E402
from bench.schema import DecisionPoint  # noqa: E402

log = logging.getLogger("bench.decide")

DEFAULT_OUT = REPO_ROOT / "leaderboards" / "predictions"
"""Where predictions files go by default."""


@dataclass(frozen=True)
class Selection:
    """The decision points one invocation evaluates."""

    version: str
    """Dataset version."""
    points: list[DecisionPoint]
    """Points to judge (split, source and limit applied), gold still attached."""
    dev: list[DecisionPoint]
    """Every dev point of the version (all sources), for fitting learned baselines."""


@dataclass
class Outcome:
    """What happened to one judge."""

    judge: str
    """Judge id."""
    state: Literal["ran", "cached", "skipped", "failed", "aborted"]
    """ran: decisions made; cached: nothing left to do; skipped: cannot run here; failed: setup
    raised; aborted: the first decision failed."""
    reason: str = ""
    """Why skipped, failed or aborted."""
    counts: dict[str, int] = field(default_factory=dict)
    """Decisions made this run, per status."""
    cached: int = 0
    """Decisions already in the file."""
    seconds: float = 0.0
    """Wall time for this judge, setup included."""
    path: str = ""
    """The predictions file."""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bench decide", description=__doc__.split("\n\n")[0])
    ap.add_argument("--judge", action="append", metavar="ID", help="run only this judge (repeat)")
    ap.add_argument(
        "--split",
        default="test",
        choices=["dev", "test", "all"],
        help="which split to judge (default: test)",
    )
    ap.add_argument("--source", help="only decision points of this source")
    ap.add_argument("--limit", type=int, help="only the first N decision points (build order)")
    ap.add_argument(
        "--force",
        action="store_true",
        help="judge every selected point again, even if already answered",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bars, warnings only")
    ap.add_argument("--judges", metavar="PATH", help="judges file (default: ./judges.toml)")
    ap.add_argument(
        "--out",
        metavar="DIR",
        default=str(DEFAULT_OUT),
        help="predictions root (default: leaderboards/predictions)",
    )
    ap.add_argument("--version", help="dataset version (default: data/build/LATEST)")
    ap.add_argument(
        "--build-dir", metavar="DIR", help="built datasets folder (default: data/build)"
    )
    ap.add_argument(
        "--on", default="local", choices=sorted(PLACES), help="where to run (default: here)"
    )
    from bench import jobs  # the --on hf-jobs options (docs/hf-jobs.md)

    jobs.add_arguments(ap)
    ap.add_argument("--check", action="store_true", help="validate the judges file and exit")
    return ap


def check(specs: list[judges_mod.JudgeSpec], path: str) -> int:
    """Print the validated judges (nothing is imported beyond backend modules)."""
    for s in specs:
        what = f"{s.prompt}/{s.parser}" if s.generative else "scorer"
        print(f"ok  {s.id:<22} {s.backend:<13} {what:<18} {s.model or '-'}")
    print(f"{path}: {len(specs)} judges valid")
    return 0


def select_points(args: argparse.Namespace) -> Selection:
    """Load the built dataset and apply --split, --source and --limit."""
    from bench import dataset

    kw: dict[str, Any] = {}
    if args.build_dir:
        kw["build_dir"] = args.build_dir
    ds = dataset.load(args.version, **kw)
    dev = [p for p in ds.points if ds.split.get(p.id) == "dev"]
    pts = [p for p in ds.points if args.split == "all" or ds.split.get(p.id) == args.split]
    if args.source:
        pts = [p for p in pts if p.source == args.source]
        if not pts:
            raise BenchError(
                f"no {args.split} decision points of source {args.source!r} in dataset {ds.version}"
            )
    if args.limit is not None:
        pts = pts[: max(0, args.limit)]
    return Selection(ds.version, pts, dev)


def template_digest(prompt: str) -> str:
    """Hash of the template files a prompt renders with, so editing one changes the config."""
    if not prompt:
        return ""
    import bench.render

    folder = Path(bench.render.__file__).parent / "templates"
    parts = [
        (f.name, f.read_text(encoding="utf-8"))
        for f in sorted(folder.glob("*.j2"))
        if f.stem in (prompt, "_view")
    ]
    return content_hash(parts)


def _budget(spec: judges_mod.JudgeSpec, backend: Any) -> Any:
    from bench import render

    p = spec.params
    if "prompt_budget_tokens" in p:
        return render.Budget(
            "tokens", int(p["prompt_budget_tokens"]), tokenizer=getattr(backend, "tokenizer", None)
        )
    if "prompt_budget" in p:
        return render.Budget("chars", int(p["prompt_budget"]))
    return render.DEFAULT_BUDGET


def prepare(
    spec: judges_mod.JudgeSpec,
    backend: Any,
    points: list[DecisionPoint],
    on_error: Callable[[predictions.Prediction], None],
) -> Iterator[JudgeInput]:
    """Judge inputs without gold (rendered for generative judges), made lazily as the runner
    pulls them, so rendering overlaps the requests in flight instead of delaying the first one
    (2,000 auditor prompts take about 0.2 s, 6% of a 50 ms x 32-concurrency run). A point whose
    prompt cannot be rendered goes to ``on_error`` as an error row."""
    render_fn: Callable[..., Any] | None = None
    budget = None
    if spec.prompt:
        from bench.render import render as render_fn

        budget = _budget(spec, backend)
    for dp in points:
        bare = replace(dp, gold=None)
        if render_fn is None:
            yield JudgeInput(dp=bare)
            continue
        try:
            prompt = render_fn(bare, spec.prompt, budget)
        except Exception as e:  # noqa: BLE001 - recorded per decision
            on_error(
                runner.error_prediction(
                    dp.id, f"render failed: {type(e).__name__}: {e}", attempts=0
                )
            )
            continue
        yield JudgeInput(dp=bare, messages=tuple(prompt.messages))


def make_parse(spec: judges_mod.JudgeSpec) -> runner.Parse | None:
    """The judge's parser as the runner calls it."""
    if not spec.generative:
        return None
    from bench import contract

    name = spec.parser

    def parse(text: str, item: JudgeInput) -> Any:
        return contract.parse(name, text, n_visible=len(item.dp.history))

    return parse


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def hardware(backend: Any = None) -> dict[str, Any]:
    """Where the run happens: platform, CPU count and, when torch is already loaded, the GPU."""
    hw: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                hw["gpu"] = torch.cuda.get_device_name(0)
                hw["gpus"] = torch.cuda.device_count()
        except Exception:  # noqa: BLE001 - hardware probing must never stop a run
            pass
    device = getattr(backend, "device", None)
    if isinstance(device, str):
        hw["device"] = device
    return hw


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Progress:
    """One tqdm bar per judge with rate, ETA and an error count; silent when quiet."""

    def __init__(self, judge: str, total: int, quiet: bool) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=total,
            desc=judge,
            unit="dec",
            disable=quiet,
            mininterval=0.5,
            dynamic_ncols=True,
            leave=True,
        )
        self.errors = 0

    def update(self, p: predictions.Prediction) -> None:
        """Count one finished decision."""
        if p.status == "error":
            self.errors += 1
            self.bar.set_postfix_str(f"errors={self.errors}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        """Finish the bar."""
        self.bar.close()


def run_judge(spec: judges_mod.JudgeSpec, sel: Selection, args: argparse.Namespace) -> Outcome:
    """Evaluate one judge over the selection, resuming its predictions file."""
    from bench import backends

    t0 = time.perf_counter()
    digest = template_digest(spec.prompt)
    chash = spec.config_hash(digest)
    path = predictions.path_for(args.out, spec.id, sel.version, chash)
    done = set() if args.force else predictions.done_ids(path)
    todo = [p for p in sel.points if p.id not in done]
    cached = len(sel.points) - len(todo)
    out = Outcome(spec.id, "cached", cached=cached, path=str(path))
    if not todo:
        return out
    try:
        backend = backends.get(spec.backend).factory(spec)
        if hasattr(backend, "fit"):
            backend.fit(sel.dev)
    except SkipJudge as e:
        return Outcome(spec.id, "skipped", str(e), cached=cached, path=str(path))
    except Exception as e:  # noqa: BLE001 - one judge's setup failure does not stop the others
        log.debug("setup of %s failed", spec.id, exc_info=True)
        return Outcome(
            spec.id,
            "failed",
            f"{type(e).__name__}: {e}",
            cached=cached,
            path=str(path),
            seconds=time.perf_counter() - t0,
        )
    bar = Progress(spec.id, len(todo), args.quiet)
    counts: dict[str, int] = {}
    try:
        with predictions.Writer(path) as w:
            w.write(
                {
                    "type": "run",
                    "judge": spec.id,
                    "config_hash": chash,
                    "config": spec.config(),
                    "template_digest": digest,
                    "dataset_version": sel.version,
                    "package_version": bench.__version__,
                    "git_commit": _git_commit(),
                    "hardware": hardware(backend),
                    "start": _now(),
                    "split": args.split,
                    "source": args.source,
                    "limit": args.limit,
                    "todo": len(todo),
                    "cached": cached,
                }
            )

            def sink(p: predictions.Prediction) -> None:
                w.decision(p)
                counts[p.status] = counts.get(p.status, 0) + 1
                bar.update(p)

            stats = runner.run(
                backend,
                prepare(spec, backend, todo, sink),
                sink,
                concurrency=spec.concurrency,
                batch_size=spec.batch_size,
                parse=make_parse(spec),
            )
            w.write(
                {
                    "type": "run_end",
                    "judge": spec.id,
                    "end": _now(),
                    "counts": counts,
                    "busy_s": round(stats.busy_s, 4),
                    "aborted": stats.aborted,
                }
            )
    finally:
        bar.close()
        close = getattr(backend, "close", None)
        if callable(close):
            close()
    state: Literal["ran", "aborted"] = "aborted" if stats.aborted else "ran"
    return Outcome(
        spec.id, state, stats.aborted or "", counts, cached, time.perf_counter() - t0, str(path)
    )


def summary(outcomes: list[Outcome]) -> str:
    """The closing table: one line per judge, skipped ones with their reason."""
    lines = [
        f"{'judge':<22} {'state':<8} {'ok':>5} {'part':>5} {'inval':>5} {'error':>5} "
        f"{'cached':>6} {'sec':>7}  note"
    ]
    for o in outcomes:
        c = o.counts
        note = o.reason or o.path
        lines.append(
            f"{o.judge:<22} {o.state:<8} {c.get('ok', 0):>5} {c.get('partial', 0):>5} "
            f"{c.get('invalid', 0):>5} {c.get('error', 0):>5} {o.cached:>6} {o.seconds:>7.1f}  {note}"
        )
    return "\n".join(lines)


def run_local(specs: list[judges_mod.JudgeSpec], args: argparse.Namespace) -> int:
    """Run the judges here, one after another."""
    sel = select_points(args)
    log.info(
        "dataset %s: %d decision points selected, %d dev points for fitting",
        sel.version,
        len(sel.points),
        len(sel.dev),
    )
    outcomes = [run_judge(s, sel, args) for s in specs]
    print(summary(outcomes))
    return 1 if any(o.state == "failed" for o in outcomes) else 0


PLACES: dict[str, Callable[[list[judges_mod.JudgeSpec], argparse.Namespace], int]] = {
    "local": run_local,
    "hf-jobs": lambda specs, args: __import__("bench.jobs").jobs.run_remote(specs, args),
}
"""Where judges can run (``--on``); a remote runner (HF Jobs) adds an entry here."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: validate judges.toml, then run (or --check only)."""
    from bench._script import setup_logging

    args = _parser().parse_args(argv)
    setup_logging(quiet=args.quiet)
    path = args.judges or str(judges_mod.DEFAULT_PATH)
    specs = judges_mod.load(path)
    if args.check:
        return check(specs, path)
    specs = judges_mod.select(specs, args.judge)
    return PLACES[args.on](specs, args)


if __name__ == "__main__":
    raise SystemExit(run(main))
