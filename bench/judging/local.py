"""Evaluating judges here: select the decision points, run each judge, resume its file.

``select_points`` reads a built dataset version and applies the split, source and limit;
``run_judge`` evaluates one judge over a ``Selection``: it finds the judge's predictions file
(``<out>/<judge>/<dataset_version>/<config_hash>.jsonl``), skips the ids already answered there,
builds the backend (fitting a learned baseline on the dev split first), renders prompts lazily as
the runner pulls them, and appends each decision as it completes. A backend whose optional
dependency, weights or key is missing is skipped with the reason. Judges never see gold labels:
decision points are passed without ``gold``; only learned baselines get the dev split's gold,
through ``fit``. The same ``run_judge`` runs inside a Hugging Face Job (``bench.jobs.worker``).
"""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import bench
from bench.core.errors import BenchError, StorageError
from bench.core.ioerrors import describe, sentence
from bench.core.lock import FileLock
from bench.core.paths import BUILD_DIR, PREDICTIONS, REPO_ROOT
from bench.core.schema import DecisionPoint
from bench.core.secrets import Redactor, named_variables
from bench.core.verdict import Verdict
from bench.dataset import reader
from bench.judging import backends, predictions, runner
from bench.judging.protocol import (
    Closable,
    Fittable,
    HasDevice,
    HasTokenizer,
    HasWeights,
    JudgeInput,
    JudgeSpec,
    SkipJudge,
)
from bench.prompts import parsers
from bench.prompts.renderer import DEFAULT_BUDGET, Budget, render, template_digest

log = logging.getLogger(__name__)

SPLITS: tuple[str, ...] = ("dev", "test", "lite", "all")
"""What ``split`` may select (``lite``: the test split's lite subset, bench.dataset.lite)."""


@dataclass(frozen=True)
class Selection:
    """The decision points one invocation evaluates."""

    version: str
    """Dataset version."""
    points: list[DecisionPoint]
    """Points to judge (split, source and limit applied), gold still attached."""
    dev: list[DecisionPoint]
    """Every dev point of the version (all sources), for fitting learned baselines."""
    split: str = "test"
    """The split the points come from (dev, test or all), recorded in the run line."""
    source: str | None = None
    """The source filter, if any (recorded in the run line)."""
    limit: int | None = None
    """The limit applied, if any (recorded in the run line)."""
    disputed: frozenset[str] = frozenset()
    """Ids of decision points whose trajectory is disputed (left out of stress runs)."""
    stress: str | None = None
    """The stress family the points are perturbed copies for (``bench.stress``), if any."""


@dataclass
class Outcome:
    """What happened to one judge."""

    judge: str
    """Judge id."""
    state: Literal["ran", "cached", "skipped", "failed", "aborted", "stopped"]
    """ran: decisions made; cached: nothing left to do; skipped: cannot run here; failed: setup
    raised; aborted: the first decision failed; stopped: interrupted (SIGINT or SIGTERM) with
    points left, which the next run judges."""
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


def select_points(
    *,
    version: str | None = None,
    build_dir: str | os.PathLike[str] = BUILD_DIR,
    split: str = "test",
    source: str | None = None,
    limit: int | None = None,
) -> Selection:
    """Load a built dataset version (the newest when None) and apply split, source and limit
    (the first N points in build order)."""
    if split not in SPLITS:
        raise BenchError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    ds = reader.load(version, build_dir=build_dir)
    dev = [p for p in ds.points if ds.split.get(p.id) == "dev"]
    if split == "lite":
        if not ds.lite:
            raise BenchError(
                f"dataset {ds.version} has no lite split: rebuild it with `python bench/build.py`"
            )
        pts = [p for p in ds.points if p.id in ds.lite]
    else:
        pts = [p for p in ds.points if split == "all" or ds.split.get(p.id) == split]
    if source:
        pts = [p for p in pts if p.source == source]
        if not pts:
            raise BenchError(
                f"no {split} decision points of source {source!r} in dataset {ds.version}"
            )
    if limit is not None:
        pts = pts[: max(0, limit)]
    return Selection(
        ds.version,
        pts,
        dev,
        split=split,
        source=source,
        limit=limit,
        disputed=frozenset(ds.disputed),
    )


def budget_for(spec: JudgeSpec, backend: object) -> Budget:
    """The prompt budget a row asks for (``prompt_budget_tokens`` needs the backend's
    tokenizer; ``prompt_budget`` counts characters), else the renderer's default."""
    p = spec.params
    if "prompt_budget_tokens" in p:
        tokenizer = backend.tokenizer if isinstance(backend, HasTokenizer) else None
        return Budget("tokens", int(p["prompt_budget_tokens"]), tokenizer=tokenizer)
    if "prompt_budget" in p:
        return Budget("chars", int(p["prompt_budget"]))
    return DEFAULT_BUDGET


def prepare(
    spec: JudgeSpec,
    backend: Any,
    points: list[DecisionPoint],
    on_error: Callable[[predictions.Prediction], None],
) -> Iterator[JudgeInput]:
    """Judge inputs without gold (rendered for generative judges), made lazily as the runner
    pulls them, so rendering overlaps the requests in flight instead of delaying the first one
    (2,000 auditor prompts take about 0.2 s, 6% of a 50 ms x 32-concurrency run). A point whose
    prompt cannot be rendered goes to ``on_error`` as an error row."""
    budget = budget_for(spec, backend) if spec.prompt else None
    for dp in points:
        bare = replace(dp, gold=None)
        if not spec.prompt:
            yield JudgeInput(dp=bare)
            continue
        try:
            prompt = render(bare, spec.prompt, budget)
        except Exception as e:  # noqa: BLE001 - recorded per decision
            on_error(
                runner.error_prediction(
                    dp.id, f"render failed: {type(e).__name__}: {e}", attempts=0
                )
            )
            continue
        yield JudgeInput(dp=bare, messages=tuple(prompt.messages))


def make_parse(spec: JudgeSpec) -> runner.Parse | None:
    """The judge's parser as the runner calls it."""
    if not spec.generative:
        return None
    name = spec.parser

    def parse(text: str, item: JudgeInput) -> Verdict:
        return parsers.parse(name, text, n_visible=len(item.dp.history))

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
    if isinstance(backend, HasDevice) and isinstance(backend.device, str):
        hw["device"] = backend.device
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


def _setup(spec: JudgeSpec, dev: list[DecisionPoint]) -> Any:
    """The backend of a row, fitted on the dev split when it learns; raises SkipJudge when it
    cannot run here."""
    backend = backends.get(spec.backend).factory(spec)
    if isinstance(backend, Fittable):
        backend.fit(dev)
    return backend


def _redacted(p: predictions.Prediction, r: Redactor) -> predictions.Prediction:
    """A decision with every secret value the row names replaced in its texts."""
    if not r:
        return p
    v = p.verdict
    return replace(
        p,
        verdict=replace(v, raw=r.text(v.raw), reason=r.text(v.reason)),
        error=r.text(p.error) if p.error else p.error,
    )


def _close(backend: Any) -> None:
    if isinstance(backend, Closable):
        try:
            backend.close()
        except Exception:  # noqa: BLE001 - a failing close must not lose the run's summary
            log.warning("closing the backend failed", exc_info=True)


def _target(spec: JudgeSpec, sel: Selection, out: str | os.PathLike[str]) -> tuple[Path, str, str]:
    """(predictions file, config hash, template digest)."""
    digest = template_digest(spec.prompt)
    chash = spec.config_hash(digest)
    return predictions.path_for(out, spec.id, sel.version, chash, sel.stress), chash, digest


def _todo(
    spec: JudgeSpec, sel: Selection, out: str | os.PathLike[str], force: bool
) -> tuple[Path, str, str, list[DecisionPoint]]:
    """(predictions file, config hash, template digest, points still to judge)."""
    path, chash, digest = _target(spec, sel, out)
    done = set() if force else predictions.done_ids(path)
    return path, chash, digest, [p for p in sel.points if p.id not in done]


WAIT_HINT = "run again when it has finished, or add --wait to wait for it instead"
"""What a run refused by another run's lock on its predictions file is told to do."""

Stop = Callable[[], bool]
"""Asked before each decision point is pulled: True when the run must stop (an interrupt)."""


def _until(stop: Stop, items: Iterator[JudgeInput]) -> Iterator[JudgeInput]:
    """``items`` until ``stop()`` says to stop: nothing new is pulled after that, while the
    decisions already pulled (in flight) finish and are written."""
    while not stop():
        item = next(items, None)
        if item is None:
            return
        yield item


def run_judge(
    spec: JudgeSpec,
    sel: Selection,
    *,
    out: str | os.PathLike[str] = PREDICTIONS,
    force: bool = False,
    quiet: bool = False,
    backend: Any = None,
    wait: bool = False,
    stop: Stop | None = None,
) -> Outcome:
    """Evaluate one judge over the selection, resuming its predictions file under ``out``
    (``force``: judge every point again; ``quiet``: no progress bar; ``backend``: one already
    set up, used as it is and left open). Never raises for what a judge does: a setup failure, a
    crash of the run or a ``SystemExit`` from judge code is the judge's outcome, and the other
    judges still run. The value of every environment variable the row names (and ``HF_TOKEN``)
    is redacted from everything written and reported.

    The file's lock is held from reading what is done to the last line written: another run on
    the same file raises ``LockedError`` at once (``wait``: waits for it, then judges only what
    it left). ``stop``, asked before each point is pulled, ends the run early: the decisions in
    flight are written and the outcome is ``stopped``. A write that fails for a reason the user
    can fix (a full disk) raises ``StorageError`` saying how many decisions the file holds."""
    path = _target(spec, sel, out)[0]
    try:
        with FileLock(path, wait=wait, hint=WAIT_HINT):
            return _run_locked(spec, sel, out, force, quiet, backend, stop)
    except OSError as e:  # taking the lock (writing failures are StorageErrors already)
        if describe(e) is None:
            raise
        try:
            saved = f"{len(predictions.done_ids(path))} decisions saved in {path}"
        except OSError:  # the file cannot even be read: say what the OS said only
            saved = ""
        raise StorageError(sentence(e, saved=saved, resume=True)) from None


def _run_locked(
    spec: JudgeSpec,
    sel: Selection,
    out: str | os.PathLike[str],
    force: bool,
    quiet: bool,
    backend: Any,
    stop: Stop | None,
) -> Outcome:
    """``run_judge`` with the file's lock held."""
    t0 = time.perf_counter()
    path, chash, digest, todo = _todo(spec, sel, out, force)
    cached = len(sel.points) - len(todo)
    if not todo:
        return Outcome(spec.id, "cached", cached=cached, path=str(path))
    secret = Redactor(named_variables(spec.params))
    owned = backend is None
    try:
        backend = _setup(spec, sel.dev) if owned else backend
    except SkipJudge as e:
        return Outcome(spec.id, "skipped", secret.text(str(e)), cached=cached, path=str(path))
    except (Exception, SystemExit) as e:  # noqa: BLE001 - one judge's failure stops no other
        log.debug("setup of %s failed", spec.id, exc_info=True)
        return Outcome(
            spec.id,
            "failed",
            secret.text(f"{type(e).__name__}: {e}"),
            cached=cached,
            path=str(path),
            seconds=time.perf_counter() - t0,
        )
    pending = _Pending(spec, sel, path, chash, digest, todo, cached, secret, stop or _never)
    try:
        counts, stats, failure = _judge(pending, backend, quiet)
    finally:
        if owned:
            _close(backend)
    stopped = pending.stop() and sum(counts.values()) < len(todo)
    state: Literal["ran", "aborted", "failed", "stopped"] = (
        "failed" if failure else "aborted" if stats.aborted else "stopped" if stopped else "ran"
    )
    reason = failure or secret.text(stats.aborted or "") or (STOPPED if stopped else "")
    return Outcome(spec.id, state, reason, counts, cached, time.perf_counter() - t0, str(path))


STOPPED = "interrupted; rerun to resume"
"""The reason of a ``stopped`` outcome."""


def _never() -> bool:
    return False


@dataclass(frozen=True)
class _Pending:
    """One judge's run with points left to judge."""

    spec: JudgeSpec
    sel: Selection
    path: Path
    """Its predictions file (appended to)."""
    chash: str
    digest: str
    todo: list[DecisionPoint]
    """The points still to judge."""
    cached: int
    """Points already in the file."""
    secret: Redactor
    stop: Stop
    """True when the run must stop pulling points (an interrupt)."""


def _judge(job: _Pending, backend: Any, quiet: bool) -> tuple[dict[str, int], runner.RunStats, str]:
    """Run the backend over the points left, appending each decision to the file as it
    completes between a run line and a run_end line: (counts per status, the runner's stats,
    why the run stopped or ''). A write the user can fix (a full disk, a permission, a
    read-only folder) stops pulling points and raises ``StorageError``: how many decisions the
    file holds, and to rerun."""
    bar = Progress(job.spec.id, len(job.todo), quiet)
    w: predictions.Writer | None = None
    try:
        with predictions.Writer(job.path) as w:
            return _append(job, backend, w, bar)
    except OSError as e:
        if describe(e) is None:
            raise
        saved = job.cached + (w.decisions if w is not None else 0)
        why = sentence(
            e,
            path=job.path,
            saved=f"{saved} decisions saved in {job.path}",
            resume=True,
            path_in_saved=e.filename in (None, str(job.path)),
        )
        raise StorageError(why) from None
    finally:
        bar.close()


def _append(
    job: _Pending, backend: Any, w: predictions.Writer, bar: Progress
) -> tuple[dict[str, int], runner.RunStats, str]:
    """``_judge``'s lines: the run line, each decision, the run_end line."""
    spec, secret = job.spec, job.secret
    counts: dict[str, int] = {}
    failure = ""
    stats = runner.RunStats()
    w.write(
        secret.row(
            _run_line(spec, job.chash, job.digest, job.sel, backend, len(job.todo), job.cached)
        )
    )

    def sink(p: predictions.Prediction) -> None:
        if w.failed is not None:
            return  # the disk refused a line: the decisions still in flight cannot be saved
        try:
            w.decision(_redacted(p, secret))
        except OSError:
            log.debug("writing %s failed", job.path, exc_info=True)
            return
        counts[p.status] = counts.get(p.status, 0) + 1
        bar.update(p)

    def stop() -> bool:
        return w.failed is not None or job.stop()

    try:
        stats = runner.run(
            backend,
            _until(stop, prepare(spec, backend, job.todo, sink)),
            sink,
            concurrency=max(1, min(spec.concurrency, len(job.todo))),
            batch_size=spec.batch_size,
            parse=make_parse(spec),
        )
    except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded as the outcome
        log.debug("run of %s failed", spec.id, exc_info=True)
        failure = secret.text(f"the run stopped: {type(e).__name__}: {e}")
    if w.failed is not None:
        raise w.failed
    stopped = job.stop() and sum(counts.values()) < len(job.todo)
    w.write(
        {
            "type": "run_end",
            "judge": spec.id,
            "end": _now(),
            "counts": counts,
            "busy_s": round(stats.busy_s, 4),
            "aborted": stats.aborted or failure or (STOPPED if stopped else None),
        }
    )
    return counts, stats, failure


def run_stress(
    spec: JudgeSpec,
    sels: list[Selection],
    *,
    out: str | os.PathLike[str] = PREDICTIONS,
    force: bool = False,
    quiet: bool = False,
    wait: bool = False,
    stop: Stop | None = None,
) -> list[Outcome]:
    """One judge over several stress selections, set up (and fitted on dev) once; an outcome
    per family, named ``<judge> ~<family>`` (``wait`` and ``stop`` as in ``run_judge``; once
    stopped, the families left are not started)."""
    pending = [s for s in sels if _todo(spec, s, out, force)[3]]
    if not pending:
        return [
            replace(
                run_judge(spec, s, out=out, force=force, quiet=True, wait=wait),
                judge=_tag(spec, s),
            )
            for s in sels
        ]
    t0 = time.perf_counter()
    secret = Redactor(named_variables(spec.params))
    try:
        backend = _setup(spec, sels[0].dev)
    except SkipJudge as e:
        return [Outcome(_tag(spec, s), "skipped", secret.text(str(e))) for s in sels]
    except (Exception, SystemExit) as e:  # noqa: BLE001 - one judge's failure stops no other
        why = secret.text(f"{type(e).__name__}: {e}")
        return [
            Outcome(_tag(spec, s), "failed", why, seconds=time.perf_counter() - t0) for s in sels
        ]
    try:
        outcomes = []
        for s in sels:
            if stop is not None and stop():
                break
            o = run_judge(
                spec, s, out=out, force=force, quiet=quiet, backend=backend, wait=wait, stop=stop
            )
            outcomes.append(replace(o, judge=_tag(spec, s)))
        return outcomes
    finally:
        _close(backend)


def _tag(spec: JudgeSpec, sel: Selection) -> str:
    return f"{spec.id} ~{sel.stress}" if sel.stress else spec.id


def _run_line(
    spec: JudgeSpec,
    chash: str,
    digest: str,
    sel: Selection,
    backend: Any,
    todo: int,
    cached: int,
) -> dict[str, Any]:
    """The ``"type": "run"`` line that opens a run session (docs/FORMATS.md)."""
    return {
        "type": "run",
        "judge": spec.id,
        "config_hash": chash,
        "config": spec.config(),
        "template_digest": digest,
        "dataset_version": sel.version,
        "package_version": bench.__version__,
        "git_commit": _git_commit(),
        "hardware": hardware(backend),
        "weights": dict(backend.weights) if isinstance(backend, HasWeights) else None,
        "start": _now(),
        "split": sel.split,
        "source": sel.source,
        "limit": sel.limit,
        "stress": sel.stress,
        "todo": todo,
        "cached": cached,
    }


def summary(outcomes: list[Outcome]) -> str:
    """The closing table: one line per judge, skipped ones with their reason."""
    w = max([22, *(len(o.judge) for o in outcomes)])
    lines = [
        f"{'judge':<{w}} {'state':<8} {'ok':>5} {'part':>5} {'inval':>5} {'error':>5} "
        f"{'cached':>6} {'sec':>7}  note"
    ]
    for o in outcomes:
        c = o.counts
        note = o.reason or o.path
        lines.append(
            f"{o.judge:<{w}} {o.state:<8} {c.get('ok', 0):>5} {c.get('partial', 0):>5} "
            f"{c.get('invalid', 0):>5} {c.get('error', 0):>5} {o.cached:>6} {o.seconds:>7.1f}  {note}"
        )
    return "\n".join(lines)
