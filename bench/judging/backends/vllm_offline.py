"""vLLM's offline engine (``vllm.LLM``), when vllm is installed (it needs a CUDA GPU).

Same row fields as ``transformers``: ``model``, ``revision`` and ``subfolder`` (a subfolder is
fetched with ``huggingface_hub.snapshot_download`` and loaded from disk, since vLLM takes none),
the chat template with ``enable_thinking``, greedy decoding (temperature 0) and
``max_new_tokens``. vLLM schedules the whole batch itself, so a large ``batch_size`` is best.
When vllm is not importable the judge is skipped with that reason.

With ``scoring = "logprobs"`` (bench.prompts.scoring) the assistant turn is continued from the
parser's answer prefix (``continue_final_message``) for one token with ``logprobs =
TOP_LOGPROBS``; the verdict comes from the first-token candidates that start a verdict word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.judging.backends import backend
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput, SkipJudge
from bench.prompts.scoring import (
    Scoring,
    first_token_logprobs,
    scoring_for,
    verdict_from_logprobs,
)

TOP_LOGPROBS = 20
"""First-token candidates read in logprobs scoring."""

PARAMS: dict[str, type | tuple[type, ...]] = {
    "dtype": str,
    "max_new_tokens": int,
    "enable_thinking": bool,
    "prompt_budget": int,
    "tensor_parallel_size": int,
    "gpu_memory_utilization": float,
    "max_model_len": int,
}
"""Declared params."""


def _model_path(judge: Any) -> str:
    if not judge.subfolder or Path(judge.model).is_dir():
        return str(Path(judge.model) / judge.subfolder) if judge.subfolder else judge.model
    from huggingface_hub import snapshot_download

    try:
        root = snapshot_download(
            judge.model, revision=judge.revision or None, allow_patterns=[f"{judge.subfolder}/*"]
        )
    except Exception as e:  # noqa: BLE001 - offline or missing: skip with the reason
        raise SkipJudge(f"cannot fetch {judge.model}/{judge.subfolder}: {e}") from e
    return str(Path(root) / judge.subfolder)


class VllmJudge:
    """vLLM offline engine (BatchBackend)."""

    def __init__(
        self, llm: Any, sampling: Any, enable_thinking: bool, scoring: Scoring | None = None
    ) -> None:
        self.llm = llm
        self.sampling = sampling
        self.enable_thinking = enable_thinking
        self.scoring = scoring

    def _scored(self, items: list[JudgeInput]) -> list[RawOutput]:
        """One token per item from the answer prefix, scored from its top candidates."""
        assert self.scoring is not None
        convs = [
            [dict(m) for m in i.messages] + [{"role": "assistant", "content": self.scoring.prefix}]
            for i in items
        ]
        outs = self.llm.chat(
            convs,
            self.sampling,
            use_tqdm=False,
            add_generation_prompt=False,
            continue_final_message=True,
            chat_template_kwargs={"enable_thinking": self.enable_thinking},
        )
        results = []
        for o in outs:
            steps = o.outputs[0].logprobs or []
            top = [
                (str(lp.decoded_token), float(lp.logprob))
                for lp in (steps[0] if steps else {}).values()
            ]
            v = verdict_from_logprobs(
                self.scoring, first_token_logprobs(self.scoring, top), "first token"
            )
            results.append(
                RawOutput(verdict=v, tokens_in=len(o.prompt_token_ids or ()), tokens_out=0)
            )
        return results

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """One chat completion per item, in order (or one scored token, for logprobs)."""
        if self.scoring is not None:
            return self._scored(items)
        outs = self.llm.chat(
            [[dict(m) for m in i.messages] for i in items],
            self.sampling,
            use_tqdm=False,
            chat_template_kwargs={"enable_thinking": self.enable_thinking},
        )
        return [
            RawOutput(
                text=o.outputs[0].text,
                tokens_in=len(o.prompt_token_ids or ()),
                tokens_out=len(o.outputs[0].token_ids),
                extra={"finish_reason": o.outputs[0].finish_reason},
            )
            for o in outs
        ]


@backend("vllm", params=PARAMS, scorings=("generate", "logprobs"), loads_weights=True)
def make(judge: JudgeSpec) -> VllmJudge:
    """Start the vLLM engine for a judge row; SkipJudge when vllm is not installed."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError as e:
        raise SkipJudge("vllm is not installed (pip install vllm; it needs a CUDA GPU)") from e
    p = judge.params
    kw: dict[str, Any] = {
        "dtype": p.get("dtype", "auto"),
        "tensor_parallel_size": p.get("tensor_parallel_size", 1),
        "gpu_memory_utilization": p.get("gpu_memory_utilization", 0.9),
    }
    if "max_model_len" in p:
        kw["max_model_len"] = p["max_model_len"]
    if judge.revision and not judge.subfolder:
        kw["revision"] = judge.revision
    llm = LLM(model=_model_path(judge), **kw)
    if judge.scoring == "logprobs":
        sampling = SamplingParams(temperature=0.0, max_tokens=1, logprobs=TOP_LOGPROBS)
        scoring = scoring_for(judge.parser)
    else:
        sampling = SamplingParams(temperature=0.0, max_tokens=int(p.get("max_new_tokens", 1024)))
        scoring = None
    return VllmJudge(llm, sampling, bool(p.get("enable_thinking", False)), scoring)
