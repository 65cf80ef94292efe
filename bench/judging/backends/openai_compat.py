"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, TGI,
Ollama, the Hugging Face router, a local mock).

One ``POST {base_url}/chat/completions`` per decision, non-streaming. The runner owns the
concurrency limit, retries and timing; this backend maps failures so the runner can act:

- HTTP 408/409/425/429 and 5xx, timeouts, refused or reset connections, a connection closed
  before the answer: ``RetryableError``, with ``retry_after`` from ``Retry-After`` (seconds or an
  HTTP-date) or ``retry-after-ms`` when the server sent one;
- any other 4xx: ``EndpointError`` (permanent) carrying the server's own message.

Params (``[judge.params]`` in judges.toml) are the fields of ``OpenAIParams``, declared once
there with their types, defaults and meaning; ``parse_params`` checks their values.

Each request carries ``X-Request-Id: <decision id>`` so a server's logs (and the mock server's
counts) can be matched to predictions rows.

With ``scoring = "logprobs"`` (bench.prompts.scoring) the request asks for one token with
``logprobs`` and ``top_logprobs`` (``TOP_LOGPROBS``), after a last user message naming the
verdict words (a chat endpoint cannot be given the answer prefix); the verdict comes from the
first-token candidates that start a verdict word. A server that returns no logprobs gives an
invalid verdict saying so.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args
from urllib.parse import urlsplit

from bench.core.errors import BenchError, ConfigError
from bench.core.secrets import check_env_name, looks_like_secret, secret_values
from bench.core.verdict import Verdict
from bench.judging.backends import backend
from bench.judging.backends._http1 import ConnectionPool
from bench.judging.protocol import JudgeInput, JudgeSpec, RawOutput, RetryableError, SkipJudge
from bench.prompts.scoring import (
    Scoring,
    first_token_logprobs,
    scoring_for,
    verdict_from_logprobs,
)

log = logging.getLogger(__name__)

TOP_LOGPROBS = 20
"""First-token candidates asked for in logprobs scoring (OpenAI's maximum)."""

RETRY_STATUS = frozenset({408, 409, 425, 429})
"""4xx answers worth retrying (timeout, conflict, too early, rate limit); every 5xx is too."""

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"})
"""Hosts that may be used without an API key."""

_FORBIDDEN_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "te",
        "upgrade",
        "content-type",
        "x-request-id",
    }
)
_SECRET_MARKERS = ("auth", "key", "token", "secret", "cookie", "password", "session")
_RESERVED_BODY = frozenset({"model", "messages", "stream"})

Client = Literal["auto", "native", "httpx"]


class EndpointError(BenchError):
    """A permanent (non-retryable) answer from the endpoint, with the server's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class OpenAIParams:
    """The validated ``params`` of an ``openai`` judge row."""

    base_url: str = "https://api.openai.com/v1"
    """API root; requests go to ``{base_url}/chat/completions`` (e.g.
    ``http://localhost:8000/v1``)."""
    api_key_env: str | None = None
    """The NAME of the environment variable that holds the key; keys are never read from
    judges.toml. Default ``OPENAI_API_KEY`` for api.openai.com, none elsewhere (None: no key is
    sent). A non-local base_url without a key skips the judge, saying which variable to set. The
    key is sent to ``base_url``: review a row's base_url before exporting the variable it
    names."""
    api_key_header: str = "Authorization"
    """Header that carries the key: ``Authorization`` as ``Bearer <key>``; any other name, e.g.
    Azure's ``api-key``, gets the bare key."""
    temperature: float = 0.0
    """Sampling temperature, 0 to 2."""
    max_tokens: int = 1024
    """Completion token limit."""
    timeout_s: float = 120.0
    """Per-request timeout (connect + send + receive)."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """A table merged into the request JSON (``seed``, ``top_p``,
    ``chat_template_kwargs = {enable_thinking = false}`` for vLLM, ...); it may not set ``model``,
    ``messages`` or ``stream``."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra non-secret headers (``OpenAI-Organization``, ``HTTP-Referer``). They are committed
    with judges.toml, so credential-like names (Authorization, Cookie, anything with
    key/token/secret/auth) are refused, and so are framing headers (Host, Content-Length,
    Transfer-Encoding, Connection) that would corrupt the request."""
    client: Client = "auto"
    """HTTP client: ``auto`` (the lean built-in HTTP/1.1 client, or httpx when an HTTP(S) proxy
    variable is set), ``native`` or ``httpx``."""


def is_local(base_url: str) -> bool:
    """True when base_url points at this machine (no key needed)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in LOCAL_HOSTS or host.endswith(".localhost")


def parse_params(judge_id: str, params: Mapping[str, Any]) -> OpenAIParams:
    """Check values (the registry already checked keys and types); ConfigError names the judge."""

    def bad(msg: str) -> ConfigError:
        return ConfigError(f"judge {judge_id!r}: params.{msg}")

    p = dict(params)
    base_url = str(p.get("base_url", OpenAIParams.base_url)).rstrip("/")
    u = urlsplit(base_url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise bad(f"base_url {base_url!r} must be an http(s) URL such as http://localhost:8000/v1")
    key_env = p.get("api_key_env")
    if key_env is None and u.hostname == "api.openai.com":
        key_env = "OPENAI_API_KEY"
    if key_env is not None:
        check_env_name(judge_id, "api_key_env", str(key_env))  # never echoes the value
    temperature = float(p.get("temperature", OpenAIParams.temperature))
    if not 0.0 <= temperature <= 2.0:
        raise bad(f"temperature {temperature} must be between 0 and 2")
    max_tokens = int(p.get("max_tokens", OpenAIParams.max_tokens))
    if max_tokens < 1:
        raise bad(f"max_tokens {max_tokens} must be at least 1")
    timeout_s = float(p.get("timeout_s", OpenAIParams.timeout_s))
    if timeout_s <= 0:
        raise bad(f"timeout_s {timeout_s} must be positive")
    extra_body = _extra_body(dict(p.get("extra_body") or {}), bad)
    headers = _headers({str(k): str(v) for k, v in dict(p.get("headers") or {}).items()}, bad)
    key_header = str(p.get("api_key_header", OpenAIParams.api_key_header))
    if (
        not key_header
        or any(c in key_header for c in "\r\n\0: ")
        or (key_header.lower() in _FORBIDDEN_HEADERS)
    ):
        raise bad(f"api_key_header {key_header!r} is not a usable header name")
    client = p.get("client", OpenAIParams.client)
    if client not in get_args(Client):
        raise bad(f"client {client!r} must be auto, native or httpx")
    return OpenAIParams(
        base_url=base_url,
        api_key_env=key_env,
        api_key_header=key_header,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
        extra_body=extra_body,
        headers=headers,
        client=client,
    )


def _extra_body(extra_body: dict[str, Any], bad: Callable[[str], ConfigError]) -> dict[str, Any]:
    """``extra_body`` when it holds no pasted secret and sets no field the backend owns."""
    pasted = secret_values(extra_body)
    if pasted:
        raise bad(
            f"extra_body.{pasted[0]} looks like a key or token: judges.toml is committed; put "
            "the key in an environment variable named by api_key_env instead"
        )
    reserved = sorted(_RESERVED_BODY & set(extra_body))
    if reserved:
        raise bad(
            f"extra_body may not set {', '.join(reserved)} (model comes from the row; "
            "streaming is not supported)"
        )
    return extra_body


def _headers(headers: dict[str, str], bad: Callable[[str], ConfigError]) -> dict[str, str]:
    """``headers`` when none is a framing header, a secret, or malformed."""
    for name, value in headers.items():
        low = name.lower()
        if low in _FORBIDDEN_HEADERS:
            raise bad(f"headers may not set {name!r}: the client sets it")
        if any(m in low for m in _SECRET_MARKERS) or looks_like_secret(value):
            raise bad(
                f"headers may not set {name!r} to a secret: secrets belong in an environment "
                "variable named by api_key_env (with api_key_header for a custom header name)"
            )
        if any(c in name + value for c in "\r\n\0") or ":" in name or not name:
            raise bad(f"headers {name!r}: names and values may not contain CR, LF, NUL or ':'")
    return headers


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP-date;
    None when absent or unreadable. Never negative. ``headers`` has lower-case names."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    ra = ra.strip()
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def server_message(body: bytes, limit: int = 500) -> str:
    """The error message a server put in its body: OpenAI's ``error.message``, vLLM's
    ``message``, FastAPI's ``detail``, TGI's ``error``, else the start of the text."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:limit].decode("utf-8", "replace").strip() or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:limit]
        for k in ("error", "message", "detail"):
            if data.get(k):
                v = data[k]
                return (v if isinstance(v, str) else json.dumps(v))[:limit]
    return json.dumps(data)[:limit]


class _Transport(Protocol):
    async def post(
        self, path: str, body: bytes, rid: str, timeout: float
    ) -> tuple[int, Mapping[str, str], bytes]: ...

    async def aclose(self) -> None: ...


class _NativeTransport:
    """The built-in HTTP/1.1 keep-alive pool (bench.judging.backends._http1)."""

    def __init__(self, base_url: str, headers: dict[str, str], max_connections: int) -> None:
        self.pool = ConnectionPool(base_url, max_connections=max_connections, headers=headers)

    async def post(
        self, path: str, body: bytes, rid: str, timeout: float
    ) -> tuple[int, Mapping[str, str], bytes]:
        r = await self.pool.request(
            "POST", path, body, headers=(("X-Request-Id", rid),), timeout=timeout
        )
        return r.status, r.headers, r.body

    async def aclose(self) -> None:
        await self.pool.aclose()


class _HttpxTransport:
    """httpx.AsyncClient with a keep-alive pool sized to the concurrency (honours proxies)."""

    def __init__(self, base_url: str, headers: dict[str, str], max_connections: int) -> None:
        import httpx

        self._httpx = httpx
        self.client = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            timeout=None,
        )

    async def post(
        self, path: str, body: bytes, rid: str, timeout: float
    ) -> tuple[int, Mapping[str, str], bytes]:
        httpx = self._httpx
        try:
            r = await self.client.post(
                path.lstrip("/"), content=body, headers={"X-Request-Id": rid}, timeout=timeout
            )
        except httpx.TimeoutException as e:
            raise TimeoutError(str(e)) from e
        except httpx.TransportError as e:  # connect, read, write, protocol errors
            raise ConnectionError(f"{type(e).__name__}: {e}") from e
        return r.status_code, {k.lower(): v for k, v in r.headers.items()}, r.content

    async def aclose(self) -> None:
        await self.client.aclose()


class OpenAIBackend:
    """AsyncBackend for one OpenAI-compatible endpoint and model."""

    def __init__(
        self,
        judge_id: str,
        model: str,
        params: OpenAIParams,
        api_key: str | None,
        max_connections: int = 32,
        scoring: Scoring | None = None,
    ) -> None:
        self.judge_id = judge_id
        self.model = model
        self.params = params
        self.scoring = scoring
        self.max_connections = max(1, max_connections)
        headers = {
            "User-Agent": "foresight-bench",
            "Accept": "application/json",
            "Content-Type": "application/json",
            **params.headers,
        }
        if api_key:
            h = params.api_key_header
            headers[h] = f"Bearer {api_key}" if h.lower() == "authorization" else api_key
        self._headers = headers
        body = {
            "model": model,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            **params.extra_body,
        }
        if scoring is not None:
            body.update(max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS)
        # the constant part of every request body, encoded once: only messages vary per call
        self._body_head = json.dumps(body, separators=(",", ":"))[:-1].encode() + b',"messages":'
        self._encode = json.JSONEncoder(separators=(",", ":")).encode
        self._transport: _Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._url = params.base_url + "/chat/completions"

    def _client_kind(self) -> str:
        if self.params.client != "auto":
            return self.params.client
        scheme = urlsplit(self.params.base_url).scheme
        proxies = urllib.request.getproxies()
        if scheme in proxies and not urllib.request.proxy_bypass(
            urlsplit(self.params.base_url).hostname or ""
        ):
            return "httpx"
        return "native"

    def _get_transport(self) -> _Transport:
        loop = asyncio.get_running_loop()
        if self._transport is None or self._loop is not loop:
            # a pool belongs to one event loop; a new loop (a new asyncio.run) gets a new pool
            kind = self._client_kind()
            cls = _HttpxTransport if kind == "httpx" else _NativeTransport
            self._transport = cls(self.params.base_url, self._headers, self.max_connections)
            self._loop = loop
        return self._transport

    def request_body(self, item: JudgeInput) -> bytes:
        """The JSON body for one decision point."""
        msgs = [dict(m) for m in item.messages]
        if self.scoring is not None:
            msgs.append({"role": "user", "content": self.scoring.instruction})
        return self._body_head + self._encode(msgs).encode() + b"}"

    async def adecide(self, item: JudgeInput) -> RawOutput:
        """One chat completion for one decision point."""
        if not item.messages:
            raise ValueError(f"judge {self.judge_id!r}: no rendered messages for {item.dp.id}")
        transport = self._get_transport()
        body = self.request_body(item)
        timeout = self.params.timeout_s
        try:
            status, headers, data = await transport.post(
                "/chat/completions", body, item.dp.id, timeout
            )
        except TimeoutError as e:
            raise RetryableError(f"no answer from {self._url} within {timeout:g} s") from e
        except (OSError, EOFError) as e:  # refused, reset, closed early (IncompleteReadError)
            raise RetryableError(
                f"connection to {self._url} failed: {type(e).__name__}: {e}"
            ) from e
        if status != 200:
            raise self._status_error(status, headers, data)
        return self._output(data)

    def _status_error(self, status: int, headers: Mapping[str, str], data: bytes) -> Exception:
        msg = server_message(data)
        if status in RETRY_STATUS or status >= 500:
            return RetryableError(
                f"HTTP {status} from {self._url}: {msg}", retry_after=parse_retry_after(headers)
            )
        if status in (401, 403):
            env = self.params.api_key_env
            hint = (
                f"check the key in ${env}"
                if env
                else "set params.api_key_env to the variable holding the key"
            )
        elif status == 404:
            hint = f"check base_url ({self.params.base_url}) and model ({self.model!r})"
        else:
            hint = "check the judge's model and params (max_tokens, extra_body) in judges.toml"
        return EndpointError(status, f"HTTP {status} from {self._url}: {msg} ({hint})")

    def _output(self, data: bytes) -> RawOutput:
        try:
            resp = json.loads(data)
            choice = resp["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise EndpointError(
                200,
                f"{self._url} answered 200 without a chat completion: {server_message(data, 200)}",
            ) from None
        text = message.get("content")
        usage = resp.get("usage") or {}
        extra: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
        if resp.get("model") and resp["model"] != self.model:
            extra["served_model"] = resp["model"]
        if message.get("refusal"):
            extra["refusal"] = message["refusal"]
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if text is None:
            text = ""
        if isinstance(reasoning, str) and reasoning:
            # servers that split reasoning out (vLLM --reasoning-parser): keep it in the raw text,
            # where the parser strips it as it strips inline <think> blocks
            text = f"<think>{reasoning}</think>\n{text}"
        if self.scoring is not None:
            return RawOutput(
                verdict=self._scored(choice),
                tokens_in=usage.get("prompt_tokens"),
                tokens_out=usage.get("completion_tokens"),
                extra=extra,
            )
        return RawOutput(
            text=text,
            tokens_in=usage.get("prompt_tokens"),
            tokens_out=usage.get("completion_tokens"),
            extra=extra,
        )

    def _scored(self, choice: Mapping[str, Any]) -> Verdict:
        """The verdict from the first token's ``top_logprobs`` (logprobs scoring)."""
        assert self.scoring is not None
        try:
            first = (choice.get("logprobs") or {})["content"][0]
            top = [(str(t["token"]), float(t["logprob"])) for t in first.get("top_logprobs") or []]
        except (KeyError, IndexError, TypeError, ValueError):
            return Verdict.invalid(
                f"{self._url} returned no logprobs: the server must support top_logprobs"
            )
        return verdict_from_logprobs(
            self.scoring, first_token_logprobs(self.scoring, top), "first token"
        )

    async def aclose(self) -> None:
        """Close the connection pool (call on the loop that used it)."""
        if self._transport is not None:
            t, self._transport = self._transport, None
            await t.aclose()


def check(judge_id: str, params: Mapping[str, Any]) -> None:
    """Value checks run by ``decide.py --check`` (``parse_params``)."""
    parse_params(judge_id, params)


@backend("openai", params=OpenAIParams, check=check, scorings=("generate", "logprobs"))
def make(judge: JudgeSpec) -> OpenAIBackend:
    """Build the backend from a validated judge row; SkipJudge when a needed key is missing."""
    if not judge.model:
        raise ConfigError(f'judge {judge.id!r}: the openai backend needs model = "<model id>"')
    params = parse_params(judge.id, judge.params)
    key = os.environ.get(params.api_key_env) if params.api_key_env else None
    if not key and not is_local(params.base_url):
        if params.api_key_env:
            raise SkipJudge(f"set {params.api_key_env} to an API key for {params.base_url}")
        raise SkipJudge(
            f"{params.base_url} is not local: set params.api_key_env in judges.toml to the name of "
            "the environment variable that holds its API key, and export that variable"
        )
    if key and urlsplit(params.base_url).scheme == "http" and not is_local(params.base_url):
        log.warning(
            "judge %s sends $%s over plain http to %s",
            judge.id,
            params.api_key_env,
            params.base_url,
        )
    return OpenAIBackend(
        judge.id,
        judge.model,
        params,
        key,
        max_connections=max(1, int(judge.concurrency or 1)),
        scoring=(
            scoring_for(judge.parser) if getattr(judge, "scoring", "") == "logprobs" else None
        ),
    )
