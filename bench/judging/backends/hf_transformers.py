"""Local causal language models through Hugging Face transformers (optional extra ``hf``).

``model`` is a hub id (with ``revision`` and ``subfolder``) or a local folder. The chat template
renders the judge's messages with ``enable_thinking`` (Qwen3's thinking switch; templates that
do not know it ignore it); prompts are LEFT-padded into batches of the judge's ``batch_size`` and
decoded greedily up to ``max_new_tokens``. Only the new tokens are decoded; ``tokens_in`` counts
the prompt's real (unpadded) tokens and ``tokens_out`` the generated ones up to end-of-sequence.

Weights are never downloaded by surprise: a model not in the local cache skips the judge with the
command that fetches it, unless the row sets ``params.download = true``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.core.errors import ConfigError
from bench.judging.backends import backend
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput, SkipJudge

DTYPES = ("auto", "float32", "bfloat16", "float16")
"""Accepted ``dtype`` values (auto: bfloat16 on a GPU, float32 on CPU)."""

PARAMS: dict[str, type | tuple[type, ...]] = {
    "dtype": str,
    "device": str,
    "max_new_tokens": int,
    "enable_thinking": bool,
    "prompt_budget": int,
    "prompt_budget_tokens": int,
    "download": bool,
}
"""Declared params (``prompt_budget``: characters; ``prompt_budget_tokens``: tokens of this
model's tokenizer; the runner passes either to the renderer)."""


def resolve_device(device: str) -> str:
    """``auto`` -> cuda when available, else cpu."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str, device: str) -> Any:
    """The torch dtype for a ``dtype`` name."""
    import torch

    if dtype not in DTYPES:
        raise ConfigError(f"params.dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return getattr(torch, dtype)


class TransformersJudge:
    """A local causal LM (BatchBackend)."""

    def __init__(
        self, model: Any, tokenizer: Any, device: str, max_new_tokens: int, enable_thinking: bool
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.enable_thinking = enable_thinking

    def chat_text(self, messages: Any) -> str:
        """The prompt string for one conversation, generation prompt appended."""
        return self.tokenizer.apply_chat_template(
            [dict(m) for m in messages],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=self.enable_thinking,
        )

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """Greedy generation for a left-padded batch; outputs in input order."""
        import torch

        texts = [self.chat_text(i.messages) for i in items]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        with torch.inference_mode():
            out = self.model.generate(
                **enc,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        width = enc["input_ids"].shape[1]
        new = out[:, width:].cpu()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        results = []
        for row, mask in zip(new.tolist(), enc["attention_mask"].cpu().tolist(), strict=True):
            # a row ends at its first end-of-sequence token (later positions are padding added
            # while other rows were still generating); a row without one hit max_new_tokens
            n_out = next((j + 1 for j, t in enumerate(row) if t in eos_ids), len(row))
            text = self.tokenizer.decode(row[:n_out], skip_special_tokens=True)
            finish = "stop" if row[:n_out] and row[n_out - 1] in eos_ids else "length"
            results.append(
                RawOutput(
                    text=text,
                    tokens_in=int(sum(mask)),
                    tokens_out=n_out,
                    extra={"finish_reason": finish},
                )
            )
        return results


def load(judge: Any) -> tuple[Any, Any, str]:
    """(model, tokenizer, device) for a judge row; SkipJudge when the SDK or weights are missing."""
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise SkipJudge("transformers/torch are not installed: pip install -e '.[hf]'") from e
    p = judge.params
    device = resolve_device(p.get("device", "auto"))
    dtype = resolve_dtype(p.get("dtype", "auto"), device)
    # never fetch weights by surprise: only from the local cache unless the row opts in
    kw: dict[str, Any] = {"local_files_only": not p.get("download", False)}
    if judge.revision:
        kw["revision"] = judge.revision
    if judge.subfolder:
        kw["subfolder"] = judge.subfolder
    try:
        tok = AutoTokenizer.from_pretrained(judge.model, **kw)
        model: Any = AutoModelForCausalLM.from_pretrained(judge.model, dtype=dtype, **kw)
    except OSError as e:
        rev = f" --revision {judge.revision}" if judge.revision else ""
        raise SkipJudge(
            f"weights for {judge.model!r} are not available here ({str(e).splitlines()[0][:160]}); "
            f"fetch them with `hf download {judge.model}{rev}` (needs network), or set params.download = true "
            "in the row, or point `model` at a local folder"
        ) from e
    if not getattr(tok, "chat_template", None):
        raise ConfigError(
            f"judge {judge.id!r}: the tokenizer of {judge.model!r} has no chat template"
        )
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model.to(device)
    model.eval()
    return model, tok, device


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    if params.get("dtype", "auto") not in DTYPES:
        raise ConfigError(
            f"judge {judge_id!r}: params.dtype {params['dtype']!r}: use one of {', '.join(DTYPES)}"
        )
    for key in ("max_new_tokens", "prompt_budget", "prompt_budget_tokens"):
        if key in params and int(params[key]) < 1:
            raise ConfigError(f"judge {judge_id!r}: params.{key} must be at least 1")


@backend("transformers", params=PARAMS, check=check)
def make(judge: JudgeSpec) -> TransformersJudge:
    """Load the model and tokenizer for a judge row."""
    model, tok, device = load(judge)
    p = judge.params
    return TransformersJudge(
        model,
        tok,
        device,
        int(p.get("max_new_tokens", 1024)),
        bool(p.get("enable_thinking", False)),
    )
