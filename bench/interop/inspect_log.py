"""An Inspect AI eval log of ``bench/interop/inspect_task.py`` as the usual predictions file.

``import_log`` reads the log (``inspect_ai.log.read_eval_log``). It refuses the log when its
samples were made for another dataset version than the ground truth's, or when it is not a log
of this task. It then writes ``<out>/<judge>/<version>/<config_hash>.jsonl``:

- a ``run`` line with the judge, the config (backend ``inspect``, the model, template and parser)
  and where the log came from;
- one ``decision`` line per sample of the first epoch: the verdict the task's scorer stored,
  re-validated, the completion as ``raw``, latency (the sample's working time) and tokens when
  the log has them;
- a ``run_end`` line.

The config hash is the judges.toml row's when the judge has one (backend ``inspect``), so
``decide.py`` sees the judge as cached. Samples the log lacks are simply absent: the leaderboard
lists the judge as incomplete, never scores it silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.core.errors import DataError
from bench.core.taxonomy import Taxonomy, load_taxonomy
from bench.core.verdict import from_row
from bench.judging import predictions
from bench.judging.protocol import JudgeSpec
from bench.prompts.renderer import template_digest

SCORER = "verdict_scorer"
"""The task's scorer, whose metadata holds the verdict."""


@dataclass(frozen=True)
class Imported:
    """What an import wrote."""

    path: Path
    """The predictions file."""
    version: str
    """Dataset version of the samples."""
    decisions: int
    """Decision lines written."""
    errors: int
    """Samples that errored in Inspect (recorded as errors)."""


OUTPUT_SETTINGS = (
    "system_message", "max_tokens", "top_p", "temperature", "stop_seqs", "best_of",
    "frequency_penalty", "presence_penalty", "logit_bias", "seed", "top_k", "num_choices",
    "effort", "reasoning_effort", "reasoning_mode", "reasoning_tokens", "reasoning_history",
    "response_schema", "extra_body",
)  # fmt: skip
"""Inspect ``GenerateConfig`` fields that can change an answer (retries, timeouts and
connection limits cannot, and are left out of the config hash)."""


def generate_settings(config: Any) -> dict[str, Any]:
    """The answer-changing generation settings a log was made with, those that were set."""
    out: dict[str, Any] = {}
    for key in OUTPUT_SETTINGS:
        value = getattr(config, key, None)
        if value is None:
            continue
        if hasattr(value, "model_dump"):
            value = value.model_dump(mode="json")
        out[key] = value
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def spec_for(
    judge: str,
    model: str,
    template: str,
    parser: str,
    row: JudgeSpec | None,
    generate: Mapping[str, Any] | None = None,
) -> JudgeSpec:
    """The judges.toml row when there is one (it must match the log), else an ad-hoc spec.
    ``generate`` (the log's generation settings) goes into the params when set, so a run at
    another temperature gets another config hash."""
    params = {"generate": dict(generate)} if generate else {}
    if row is None:
        return JudgeSpec(
            id=judge, backend="inspect", model=model, prompt=template, parser=parser, params=params
        )
    if dict(row.params.get("generate") or {}) != dict(generate or {}):
        raise DataError(
            f"judges.toml row {judge!r} has params.generate {dict(row.params.get('generate') or {})}, "
            f"the log was made with {dict(generate or {})}: import it under another judge id or "
            "fix the row"
        )
    for key, want in (("model", model), ("prompt", template), ("parser", parser)):
        if getattr(row, key) != want:
            raise DataError(
                f"judges.toml row {judge!r} has {key} {getattr(row, key)!r}, the log {want!r}: "
                "import it under another judge id or fix the row"
            )
    return row


def _tokens(usage: Mapping[str, Any]) -> tuple[int | None, int | None]:
    ins = [getattr(u, "input_tokens", None) for u in usage.values()]
    outs = [getattr(u, "output_tokens", None) for u in usage.values()]
    tin = (
        sum(x for x in ins if isinstance(x, int)) if any(isinstance(x, int) for x in ins) else None
    )
    tout = (
        sum(x for x in outs if isinstance(x, int))
        if any(isinstance(x, int) for x in outs)
        else None
    )
    return tin, tout


def import_log(
    log_path: str | Path,
    judge: str,
    out: str | Path,
    ground_truth_version: str,
    row: JudgeSpec | None = None,
    *,
    wait: bool = False,
) -> Imported:
    """Write the predictions file for one Inspect log (module docstring); ``wait``: wait for
    another writer of the same file to finish instead of being refused at once."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(log_path))
    samples = _samples(log, log_path, ground_truth_version)
    meta = samples[0].metadata or {}
    template, parser = str(meta.get("template", "")), str(meta.get("parser", ""))
    settings = generate_settings(log.plan.config if log.plan else None)
    settings = {**generate_settings(log.eval.model_generate_config), **settings}
    spec = spec_for(judge, str(log.eval.model), template, parser, row, settings)
    digest = template_digest(spec.prompt)
    chash = spec.config_hash(digest)
    path = predictions.path_for(out, judge, ground_truth_version, chash)
    vocab = load_taxonomy()
    n = errors = 0
    with predictions.Writer(
        path, wait=wait, hint="rerun with --wait to wait for it, or when it has finished"
    ) as w:
        w.write(
            {
                "type": "run",
                "judge": judge,
                "config_hash": chash,
                "config": spec.config(),
                "template_digest": digest,
                "dataset_version": ground_truth_version,
                "start": datetime.now(UTC).isoformat(timespec="seconds"),
                "source": "inspect",
                "inspect": {
                    "log": Path(log_path).name,
                    "eval_id": log.eval.eval_id,
                    "created": log.eval.created,
                    "model": log.eval.model,
                    "model_base_url": log.eval.model_base_url,
                    "split": meta.get("split"),
                },
            }
        )
        for s in samples:
            p = _prediction(s, vocab)
            w.decision(p)
            n += 1
            errors += bool(s.error) or _score(s) is None
        w.write(
            {
                "type": "run_end",
                "judge": judge,
                "end": datetime.now(UTC).isoformat(timespec="seconds"),
                "counts": {"decisions": n, "errors": errors},
            }
        )
    return Imported(path, ground_truth_version, n, errors)


def _samples(log: Any, log_path: str | Path, ground_truth_version: str) -> list[Any]:
    """The log's first-epoch samples; DataError unless they were made by the Inspect task on
    the dataset version of the ground truth."""
    samples = [s for s in (log.samples or []) if s.epoch == 1]
    if not samples:
        raise DataError(f"{log_path}: the log holds no samples (was it written with log_samples?)")
    versions = {str((s.metadata or {}).get("dataset_version", "")) for s in samples}
    if versions == {""}:
        raise DataError(
            f"{log_path}: its samples carry no dataset_version: it is not a log of "
            "bench/interop/inspect_task.py"
        )
    if versions != {ground_truth_version}:
        raise DataError(
            f"{log_path}: made for dataset version {sorted(versions)}, the ground truth is "
            f"{ground_truth_version!r}: rerun `inspect eval` on the current build"
        )
    return samples


def _score(sample: Any) -> Any:
    """The sample's score by this project's scorer, or None."""
    return (sample.scores or {}).get(SCORER)


def _prediction(s: Any, vocab: Taxonomy) -> predictions.Prediction:
    """One sample as a predictions row: the scorer's verdict fields, checked; an errored or
    unscored sample is an error."""
    score = _score(s)
    fields: dict[str, Any] = dict(score.metadata or {}) if score else {}
    raw = s.output.completion if s.output else ""
    if s.error or score is None:
        fields = {"status": "error", "reason": "the sample errored in Inspect"}
    tin, tout = _tokens(s.model_usage or {})
    return predictions.Prediction(
        id=str(s.id),
        verdict=from_row({**fields, "raw": raw}, vocab),
        latency_s=s.working_time,
        tokens_in=tin,
        tokens_out=tout,
        error=str(s.error.message) if s.error else None,
    )
