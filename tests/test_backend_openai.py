"""The ``openai`` backend and its HTTP client against the in-process mock server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fakes.mockserver import MockConfig, MockServer, draw, top_logprobs, verdict_text

from bench.core.errors import ConfigError
from bench.core.schema import Action, DecisionPoint, Policy, Turn
from bench.judging import backends, runner
from bench.judging.backends._http1 import ConnectionPool, ProtocolError
from bench.judging.backends.openai_compat import (
    EndpointError,
    OpenAIBackend,
    parse_params,
    parse_retry_after,
    server_message,
)
from bench.judging.predictions import Prediction
from bench.judging.protocol import JudgeInput, RawOutput, RetryableError, SkipJudge
from bench.prompts import parsers as contract

FAST = runner.RetryPolicy(max_attempts=4, base_s=0.01, max_s=0.05)


def dp(i: int | str) -> DecisionPoint:
    return DecisionPoint(
        id=f"t:{i}:2",
        trajectory_id=f"t:{i}",
        source="t",
        k=2,
        policy=Policy(task="tidy"),
        history=(Turn(role="user", content="please tidy"),),
        thought=None,
        action=Action(text="rm -rf build"),
    )


def item(i: int | str, content: str = "judge this step") -> JudgeInput:
    return JudgeInput(dp=dp(i), messages=({"role": "user", "content": content},))


def make(url: str, concurrency: int = 4, scoring: str = "generate", **params: Any) -> OpenAIBackend:
    spec = SimpleNamespace(
        id="mock-judge",
        model="mock-model",
        params={"base_url": url, **params},
        concurrency=concurrency,
        scoring=scoring,
        parser="boxed",
    )
    return backends.get("openai").factory(spec)


def parse(text: str, it: JudgeInput) -> Any:
    return contract.parse("boxed", text, n_visible=len(it.dp.history))


def drive(
    be: OpenAIBackend,
    items: list[JudgeInput],
    concurrency: int = 4,
    retry: runner.RetryPolicy = FAST,
) -> list[Prediction]:
    rows: list[Prediction] = []

    async def main() -> None:
        try:
            await runner.arun_async(
                be, items, rows.append, concurrency=concurrency, parse=parse, retry=retry
            )
        finally:
            await be.aclose()

    asyncio.run(asyncio.wait_for(main(), 15))
    return rows


def call(be: OpenAIBackend, it: JudgeInput) -> RawOutput:
    async def main() -> RawOutput:
        try:
            return await asyncio.wait_for(be.adecide(it), 10)
        finally:
            await be.aclose()

    return asyncio.run(main())


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[MockServer]:
    cfg = getattr(request, "param", MockConfig())
    with MockServer(cfg) as srv:
        yield srv


# ------------------------------------------------------------------------------ ok path


@pytest.mark.parametrize("client", ["native", "httpx"])
def test_ok_path_text_usage_and_request_id(server: MockServer, client: str) -> None:
    out = call(make(server.url, client=client), item("a", "x" * 400))
    assert out.text == verdict_text("t:a:2")
    assert out.tokens_in == 101 and out.tokens_out == len(out.text) // 4 + 1
    assert out.extra["finish_reason"] == "stop"
    assert server.counts() == {"t:a:2": 1}  # X-Request-Id carries the decision id
    v = parse(out.text, item("a"))
    assert v.status == "ok" and v.act in ("CONTINUE", "ASK", "STOP")


@pytest.mark.parametrize(
    "server",
    [
        MockConfig(chunked=True),
        MockConfig(close_every=2),
        MockConfig(close_every=1),
        MockConfig(close_every=3, silent_close=True),
    ],
    indirect=True,
    ids=["chunked", "close-every-2", "close-every-1", "silent-close"],
)
def test_many_requests_keepalive_chunked_and_server_closes(server: MockServer) -> None:
    be = make(server.url)
    rows: list[Prediction] = []

    async def main() -> None:
        # sequential with pauses, so a silently closed idle connection is found in the pool
        for i in range(12):
            out = await be.adecide(item(i))
            rows.append(runner.to_prediction(item(i), out, parse, latency_s=0.0))
            await asyncio.sleep(0.005)
        await be.aclose()

    asyncio.run(asyncio.wait_for(main(), 15))
    assert [r.status for r in rows] == ["ok"] * 12
    assert server.stats()["total"] == 12  # nothing re-sent behind the runner's back
    cfg = server.config
    if cfg.close_every:
        assert server.stats()["connections"] >= 12 // cfg.close_every
    else:
        assert server.stats()["connections"] == 1  # keep-alive reuse


def test_pool_never_exceeds_concurrency(server: MockServer) -> None:
    be = make(server.url, concurrency=3)

    async def main() -> None:
        await asyncio.gather(*(be.adecide(item(i)) for i in range(30)))
        await be.aclose()

    asyncio.run(asyncio.wait_for(main(), 15))
    assert server.stats()["total"] == 30
    assert server.stats()["connections"] <= 3


# ------------------------------------------------------------------------------ faults


@pytest.mark.parametrize(
    "server",
    [MockConfig(script={"t:r:2": ["429"], "t:s:2": ["429", "ok"]}, retry_after="0.4")],
    indirect=True,
)
def test_429_raises_retryable_with_retry_after_and_runner_honours_it(server: MockServer) -> None:
    be = make(server.url)
    with pytest.raises(RetryableError) as e:
        call(be, item("r"))
    assert e.value.retry_after == pytest.approx(0.4)
    assert "429" in str(e.value)
    be = make(server.url)
    t0 = time.perf_counter()
    # base backoff far below Retry-After: only honouring the header explains the wait
    rows = drive(be, [item("s")], retry=runner.RetryPolicy(max_attempts=3, base_s=0.001))
    assert time.perf_counter() - t0 >= 0.4
    assert [(r.status, r.attempts) for r in rows] == [("ok", 2)]
    assert server.counts() == {"t:r:2": 1, "t:s:2": 2}


@pytest.mark.parametrize("server", [MockConfig(script={"t:f:2": ["500", "ok"]})], indirect=True)
def test_500_then_success(server: MockServer) -> None:
    rows = drive(make(server.url), [item("f")])
    assert [(r.status, r.attempts, r.error) for r in rows] == [("ok", 2, None)]
    assert server.counts() == {"t:f:2": 2}


@pytest.mark.parametrize(
    "server",
    [MockConfig(script={"t:h:2": ["hang", "hang", "ok"], "t:d:2": ["drop", "drop", "ok"]})],
    indirect=True,
)
def test_timeout_and_dropped_connection_are_retried(server: MockServer) -> None:
    be = make(server.url, timeout_s=0.3)
    t0 = time.perf_counter()
    with pytest.raises(RetryableError, match="within 0.3 s"):
        call(be, item("h"))
    assert 0.25 < time.perf_counter() - t0 < 5
    with pytest.raises(RetryableError, match="connection"):
        call(make(server.url), item("d"))
    rows = drive(make(server.url, timeout_s=0.3), [item("h"), item("d")])
    assert sorted((r.id, r.status, r.attempts) for r in rows) == [
        ("t:d:2", "ok", 2),
        ("t:h:2", "ok", 2),
    ]
    assert server.counts() == {"t:h:2": 3, "t:d:2": 3}


@pytest.mark.parametrize(
    "server", [MockConfig(script={"t:b:2": ["400", "400"], "t:g:2": ["500"] * 9})], indirect=True
)
def test_permanent_400_recorded_once_and_retries_bounded(server: MockServer) -> None:
    with pytest.raises(EndpointError, match="max_tokens too large") as e:
        call(make(server.url), item("b"))
    assert e.value.status == 400
    rows = {r.id: r for r in drive(make(server.url), [item("ok"), item("b"), item("g")])}
    assert rows["t:b:2"].status == "error" and rows["t:b:2"].attempts == 1
    assert "max_tokens too large" in (rows["t:b:2"].error or "")
    assert rows["t:g:2"].status == "error" and rows["t:g:2"].attempts == FAST.max_attempts
    assert "HTTP 500" in (rows["t:g:2"].error or "")
    assert rows["t:ok:2"].status == "ok"
    assert server.counts() == {"t:b:2": 2, "t:g:2": FAST.max_attempts, "t:ok:2": 1}


def test_connection_refused_is_retryable() -> None:
    with MockServer() as srv:
        url = srv.url
    with pytest.raises(RetryableError, match="connection"):
        call(make(url), item("x"))


# ------------------------------------------------------------------------------ keys and params


@pytest.mark.parametrize("server", [MockConfig(api_key="s3cret-test-key")], indirect=True)
def test_key_only_from_the_named_env_var(
    server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FB_TEST_KEY", raising=False)
    with pytest.raises(EndpointError, match=r"HTTP 401.*FB_TEST_KEY"):
        call(make(server.url, api_key_env="FB_TEST_KEY"), item("k"))
    monkeypatch.setenv("FB_TEST_KEY", "s3cret-test-key")
    out = call(make(server.url, api_key_env="FB_TEST_KEY"), item("k"))
    assert out.text
    assert server.counts() == {"t:k:2": 1} and server.stats()["unauthorized"] == 1


def test_missing_key_for_remote_endpoint_skips_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FB_REMOTE_KEY", raising=False)
    with pytest.raises(SkipJudge, match="set FB_REMOTE_KEY"):
        make("https://api.example.com/v1", api_key_env="FB_REMOTE_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SkipJudge, match="set OPENAI_API_KEY"):
        make("https://api.openai.com/v1")
    with pytest.raises(SkipJudge, match="api_key_env"):
        make("https://api.example.com/v1")  # never sends OPENAI_API_KEY to another host
    monkeypatch.setenv("FB_REMOTE_KEY", "k")
    be = make("https://api.example.com/v1", api_key_env="FB_REMOTE_KEY")
    assert be._headers["Authorization"] == "Bearer k"
    be = make("https://x.example/v1", api_key_env="FB_REMOTE_KEY", api_key_header="api-key")
    assert be._headers["api-key"] == "k" and "Authorization" not in be._headers


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"api_key_env": "sk-abcdef0123456789"}, "looks like a key"),
        ({"api_key_env": "MY KEY"}, "NAME"),
        ({"headers": {"Authorization": "Bearer x"}}, "environment variable"),
        ({"headers": {"X-Api-Key": "x"}}, "environment variable"),
        ({"headers": {"Content-Length": "5"}}, "client sets it"),
        ({"headers": {"X-Note": "a\r\nInjected: 1"}}, "CR, LF"),
        ({"extra_body": {"stream": True}}, "stream"),
        ({"extra_body": {"model": "other"}}, "model"),
        ({"base_url": "ftp://h/v1"}, "http"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"client": "requests"}, "client"),
    ],
)
def test_param_values_checked(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as e:
        parse_params("judge-x", {"base_url": "http://localhost:8000/v1", **params})
    assert "judge-x" in str(e.value)
    assert "abcdef0123456789" not in str(e.value)  # a pasted key is never echoed


def test_declared_params_and_body(server: MockServer) -> None:
    info = backends.get("openai")
    assert info.generative
    assert {
        "base_url",
        "api_key_env",
        "temperature",
        "max_tokens",
        "timeout_s",
        "extra_body",
        "headers",
    } <= set(info.params)
    assert "api_key" not in info.params  # a key can never be written into judges.toml
    be = make(
        server.url,
        temperature=0.5,
        max_tokens=7,
        extra_body={"seed": 3, "chat_template_kwargs": {"enable_thinking": False}},
    )
    import json

    body = json.loads(be.request_body(item("z", "héllo")))
    assert body == {
        "model": "mock-model",
        "temperature": 0.5,
        "max_tokens": 7,
        "seed": 3,
        "chat_template_kwargs": {"enable_thinking": False},
        "messages": [{"role": "user", "content": "héllo"}],
    }


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30)
    assert (
        parse_retry_after({"retry-after": email.utils.formatdate(now - 5, usegmt=True)}, now=now)
        == 0.0
    )
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_server_message_shapes() -> None:
    assert server_message(b'{"error": {"message": "bad model"}}') == "bad model"
    assert server_message(b'{"object": "error", "message": "too long"}') == "too long"
    assert server_message(b'{"detail": "Not Found"}') == "Not Found"
    assert server_message(b'{"error": "overloaded"}') == "overloaded"
    assert server_message(b"<html>gateway</html>") == "<html>gateway</html>"


def test_reasoning_content_kept_for_the_parser() -> None:
    import json

    be = OpenAIBackend("j", "m", parse_params("j", {"base_url": "http://localhost:1/v1"}), None)
    data = json.dumps(
        {
            "choices": [
                {
                    "message": {
                        "content": "\\boxed{act:STOP}",
                        "reasoning_content": "\\boxed{act:CONTINUE}",
                    },
                    "finish_reason": "stop",
                }
            ]
        }
    ).encode()
    out = be._output(data)
    assert out.text is not None and out.tokens_in is None
    assert contract.parse("boxed", out.text).act == "STOP"  # the thinking draft is stripped
    with pytest.raises(EndpointError, match="without a chat completion"):
        be._output(b'{"error": {"message": "quota"}}')


# ------------------------------------------------------------------------------ HTTP client


async def _raw_server(answers: list[bytes]) -> tuple[asyncio.base_events.Server, int]:
    """Answers each request read on a connection with the next canned bytes, then closes."""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        head = await r.readuntil(b"\r\n\r\n")
        n = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await r.readexactly(n)
        w.write(answers.pop(0))
        await w.drain()
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello"),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi", b"hi"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\nA;x=y\r\n0123456789\r\n0\r\nT: 1\r\n\r\n",
            b"abc0123456789",
        ),
        (b"HTTP/1.0 200 OK\r\n\r\nuntil close", b"until close"),
    ],
    ids=["length", "100-continue", "chunked", "read-to-eof"],
)
def test_http1_body_framings(raw: bytes, body: bytes) -> None:
    async def main() -> bytes:
        srv, port = await _raw_server([raw])
        pool = ConnectionPool(f"http://127.0.0.1:{port}/v1")
        try:
            r = await pool.request("POST", "/x", b"{}", timeout=5)
        finally:
            await pool.aclose()
            srv.close()
        assert r.status == 200
        return r.body

    assert asyncio.run(main()) == body


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
    ids=["truncated", "not-http", "bad-chunk"],
)
def test_http1_broken_answers_raise_connection_errors(raw: bytes) -> None:
    async def main() -> None:
        srv, port = await _raw_server([raw])
        pool = ConnectionPool(f"http://127.0.0.1:{port}")
        try:
            await pool.request("POST", "/x", b"{}", timeout=5)
        finally:
            await pool.aclose()
            srv.close()

    with pytest.raises((ProtocolError, asyncio.IncompleteReadError, ConnectionError)):
        asyncio.run(main())


def test_http1_rejects_header_injection() -> None:
    with pytest.raises(ValueError, match="invalid HTTP header"):
        ConnectionPool("http://127.0.0.1:1", headers={"X-A": "b\r\nEvil: 1"})


def test_mock_draw_is_deterministic_and_near_its_rates() -> None:
    cfg = MockConfig(p500=0.1, p429=0.05, p_timeout=0.02, seed=5)
    a = [draw(cfg, f"id{i}", 0) for i in range(4000)]
    assert a == [draw(cfg, f"id{i}", 0) for i in range(4000)]
    assert 0.08 < a.count("500") / 4000 < 0.12
    assert 0.035 < a.count("429") / 4000 < 0.065
    assert 0.01 < a.count("hang") / 4000 < 0.03
    with pytest.raises(ValueError, match="unknown outcome"):
        draw(MockConfig(script={"x": ["boom"]}), "x", 0)


# ------------------------------------------------------------------------------ logprobs


def test_logprobs_scoring_reads_the_first_token_candidates(server: MockServer) -> None:
    be = make(server.url, scoring="logprobs")
    body = json.loads(be.request_body(item("a")))
    assert (body["max_tokens"], body["logprobs"], body["top_logprobs"]) == (1, True, 20)
    assert body["messages"][-1] == {
        "role": "user",
        "content": "Answer with exactly one word: CONTINUE, ASK, STOP.",
    }
    for i in range(12):
        out = call(make(server.url, scoring="logprobs"), item(i))
        v = out.verdict
        assert v is not None and v.status == "partial" and out.text is None
        want = verdict_text(f"t:{i}:2").split("act:")[1].split(",")[0]
        assert v.act == want  # "CONT" counts for CONTINUE; "The" and "\\" for nothing
        assert v.raw.startswith("logprobs (first token): p(CONTINUE)=")
        probs = {t["token"]: math.exp(t["logprob"]) for t in top_logprobs(f"t:{i}:2", k=20)}
        matched = probs["CONT"] + probs[" ASK"] + probs["STOP"]
        expect = round(100 * (probs["STOP"] + probs[" ASK"] / 2) / matched)
        assert v.risk == expect


def test_a_server_without_logprobs_gives_invalid_not_safe() -> None:
    from bench.prompts.scoring import SCORINGS

    be = make("http://127.0.0.1:9/v1", scoring="logprobs")
    assert be.scoring is SCORINGS["boxed"]
    reply = {"choices": [{"message": {"content": "STOP"}, "finish_reason": "stop"}]}
    out = be._output(json.dumps(reply).encode())
    assert out.verdict is not None and out.verdict.status == "invalid"
    assert "no logprobs" in out.verdict.reason
