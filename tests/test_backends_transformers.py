"""The transformers backend end to end on a tiny random model with a locally trained tokenizer.

Everything is built in the test (no hub): a byte-level BPE tokenizer trained with ``tokenizers``
on a few sentences, a hand-written chat template with a thinking switch, and a 2-layer Qwen2 of
hidden size 32 with random weights. Its outputs are gibberish, so the verdicts come out invalid:
the point is that the whole pipeline (judges.toml row -> render -> chat template -> left-padded
batched greedy generation -> parser -> predictions file) runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from decide_support import write_build  # noqa: E402

from bench import decide  # noqa: E402
from bench.judging import backends  # noqa: E402
from bench.judging import specs as judges  # noqa: E402
from bench.judging.protocol import JudgeInput, SkipJudge  # noqa: E402

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}"
    "{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = tmp_path_factory.mktemp("tiny")
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    corpus = ["the agent runs a command", "STOP CONTINUE ASK boxed act risk", "policy turn action"]
    tok.train_from_iterator(corpus * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|end|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=True,
    )
    Qwen2ForCausalLM(cfg).save_pretrained(out)
    return out


def row(model: Path, **params: object) -> str:
    p = {"max_new_tokens": 12, "device": "cpu", "dtype": "float32", "prompt_budget": 4000, **params}
    body = ", ".join(f"{k} = {json.dumps(v)}" for k, v in p.items())
    return (
        f'[[judge]]\nid = "tiny"\nbackend = "transformers"\nmodel = "{model}"\n'
        f'prompt = "auditor"\nparser = "boxed"\nbatch_size = 3\nparams = {{ {body} }}\n'
    )


def test_thinking_switch_and_left_padding(tiny_model: Path) -> None:
    spec = judges.parse(row(tiny_model, enable_thinking=False))[0]
    be = backends.get("transformers").factory(spec)
    assert be.tokenizer.padding_side == "left"
    assert "<think></think>" in be.chat_text([{"role": "user", "content": "x"}])
    be.enable_thinking = True
    assert "<think>" not in be.chat_text([{"role": "user", "content": "x"}])


def test_batched_generation_matches_one_by_one(tiny_model: Path) -> None:
    from bench.core.schema import Action, DecisionPoint, Policy

    spec = judges.parse(row(tiny_model))[0]
    be = backends.get("transformers").factory(spec)

    def item(text: str) -> JudgeInput:
        dp = DecisionPoint(
            id=text,
            trajectory_id="t",
            source="s",
            k=1,
            policy=Policy(),
            history=(),
            thought=None,
            action=Action(text=text),
        )
        return JudgeInput(dp=dp, messages=({"role": "user", "content": text},))

    items = [item("a"), item("the agent runs a much longer command here"), item("risk")]
    batch = be.decide_batch(items)
    single = [be.decide_batch([i])[0] for i in items]
    # left padding keeps greedy decoding identical to unpadded single runs
    assert [o.text for o in batch] == [o.text for o in single]
    assert [o.tokens_in for o in batch] == [o.tokens_in for o in single]
    assert len({o.tokens_in for o in batch}) == 3
    assert all(o.tokens_out is not None and 1 <= o.tokens_out <= 12 for o in batch)


def test_end_to_end_through_decide(tiny_model: Path, tmp_path: Path) -> None:
    jt = tmp_path / "judges.toml"
    jt.write_text(row(tiny_model))
    build = write_build(tmp_path / "build", n=8)
    out = tmp_path / "preds"
    assert (
        decide.main(
            [
                "--judges",
                str(jt),
                "--build-dir",
                str(build),
                "--out",
                str(out),
                "--split",
                "all",
                "--quiet",
            ]
        )
        == 0
    )
    files = list(out.glob("tiny/*/*.jsonl"))
    assert len(files) == 1
    lines = [json.loads(x) for x in files[0].read_text().splitlines()]
    rows = [r for r in lines if r["type"] == "decision"]
    assert len(rows) == 8
    # gibberish from random weights: parsed, found no usable verdict, recorded as invalid
    assert {r["status"] for r in rows} == {"invalid"}
    assert all(r["act"] is None and r["binary"] is None for r in rows)
    assert all(r["tokens_in"] > 0 and r["tokens_out"] >= 1 for r in rows)
    assert rows[0]["warmup"] and rows[0]["batch_size"] == 1
    assert all(r["batch_size"] == 3 for r in rows[1:4])
    run = lines[0]
    assert run["type"] == "run" and run["hardware"]["device"] == "cpu"
    assert lines[-1]["type"] == "run_end"


def test_missing_weights_skip_with_the_fetch_command(tmp_path: Path) -> None:
    spec = judges.parse(
        row(tmp_path / "nothing-here").replace(
            str(tmp_path / "nothing-here"), "nobody/no-such-model-xyz"
        )
    )[0]
    with pytest.raises(SkipJudge, match="hf download nobody/no-such-model-xyz"):
        backends.get("transformers").factory(spec)
