"""A mock OpenAI-compatible chat-completions server for tests and the runner benchmark.

A small asyncio HTTP/1.1 server on 127.0.0.1 (port chosen by the OS) that answers
``POST /v1/chat/completions`` with a valid boxed verdict after a configurable latency, and injects
faults at configurable rates: HTTP 500, HTTP 429 with ``Retry-After``, hangs (no answer until the
client gives up: a client timeout) and dropped connections (closed without an answer). Faults
are deterministic: the outcome of the n-th request for a decision id depends only on the seed,
the id and n, never on arrival order. Every request is counted per id (the ``X-Request-Id``
header the ``openai`` backend sends), so tests can check that nothing was asked twice.
``GET /stats`` returns the counts as JSON.

In-process use::

    with MockServer(MockConfig(latency=0.05, p500=0.1)) as srv:
        ...  # srv.url is "http://127.0.0.1:<port>/v1"; srv.counts() per id

As a separate process (prints the port on its first line, then serves until killed)::

    cd tests && python -m fakes.mockserver --port 0 --latency 0.05 --p500 0.1 --p429 0.05 --p-timeout 0.02
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import signal
import sys
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["ok", "500", "429", "hang", "drop", "400"]
"""What the server does with one request: answer, HTTP 500, HTTP 429, hang, drop the
connection without answering, or a permanent HTTP 400."""

OUTCOMES: tuple[str, ...] = ("ok", "500", "429", "hang", "drop", "400")

_ACTS = ("CONTINUE", "ASK", "STOP")
_REASONS = {
    401: "Unauthorized",
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
}


@dataclass(frozen=True)
class MockConfig:
    """How the mock server behaves."""

    latency: float = 0.0
    """Seconds to wait before answering (ok and 500 answers; 429 and drops are immediate)."""
    p500: float = 0.0
    """Probability that a request gets HTTP 500."""
    p429: float = 0.0
    """Probability that a request gets HTTP 429 with Retry-After."""
    p_timeout: float = 0.0
    """Probability that a request hangs until the client closes the connection."""
    p_drop: float = 0.0
    """Probability that the connection is closed after the request is read, without an answer."""
    retry_after: str = "0.05"
    """The Retry-After header value sent with 429 (seconds or an HTTP-date)."""
    seed: int = 0
    """Seed of the deterministic fault draw."""
    chunked: bool = False
    """Send bodies with Transfer-Encoding: chunked instead of Content-Length."""
    close_every: int = 0
    """When > 0, close each connection after this many answers (with ``Connection: close``)."""
    silent_close: bool = False
    """With close_every: close without announcing it (a server dropping idle keep-alive
    connections), so the client finds a stale connection in its pool."""
    hang_s: float = 600.0
    """Upper bound of a hang, in seconds (a hang also ends when the client disconnects)."""
    script: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Per id, the outcomes of its first requests in order (``OUTCOMES``); later requests fall
    back to the rates."""
    text: str | None = None
    """Fixed completion text; None: a valid boxed verdict that depends on the id."""
    api_key: str | None = None
    """When set, requests without ``Authorization: Bearer <api_key>`` get HTTP 401 (not counted)."""


def verdict_text(rid: str, seed: int = 0) -> str:
    """A valid boxed auditor verdict, deterministic in the id (the act varies with the id)."""
    h = hashlib.blake2b(f"{seed}|{rid}".encode(), digest_size=4).digest()
    act = _ACTS[h[0] % 3]
    risk = {"CONTINUE": 5 + h[1] % 20, "ASK": 40 + h[1] % 30, "STOP": 75 + h[1] % 25}[act]
    if act == "CONTINUE":
        tax = "fail:NONE, harm:NONE, src:NONE, cite:NONE"
    else:
        tax = "fail:data_exposure, harm:privacy, src:untrusted_content, cite:1"
    return f"<think>mock reasoning</think>\n\\boxed{{act:{act}, risk:{risk}, {tax}}}"


FIRST_TOKENS = {"CONTINUE": "CONT", "ASK": " ASK", "STOP": "STOP"}
"""How the mock's tokenizer starts each verdict word (CONTINUE splits, as real ones do)."""


def top_logprobs(rid: str, seed: int = 0, k: int = 5) -> list[dict[str, Any]]:
    """The first-token candidates the mock returns with ``logprobs``: the id's act (as in
    ``verdict_text``) most likely, the other two acts, and tokens that match no verdict word."""
    h = hashlib.blake2b(f"{seed}|{rid}".encode(), digest_size=4).digest()
    act = _ACTS[h[0] % 3]
    probs = {FIRST_TOKENS[act]: 0.6}
    for other in _ACTS:
        if other != act:
            probs[FIRST_TOKENS[other]] = 0.15 if other == "STOP" or act == "STOP" else 0.1
    probs["The"] = 0.08
    probs["\\"] = 0.02
    order = sorted(probs, key=lambda t: -probs[t])[: max(1, k)]
    return [{"token": t, "logprob": math.log(probs[t]), "bytes": list(t.encode())} for t in order]


def draw(config: MockConfig, rid: str, n: int) -> Outcome:
    """The outcome of the ``n``-th (0-based) request for ``rid``: the script first, then a draw
    that depends only on (seed, rid, n)."""
    scripted = config.script.get(rid)
    if scripted is not None and n < len(scripted):
        out = scripted[n]
        if out not in OUTCOMES:
            raise ValueError(
                f"unknown outcome {out!r} in the script for {rid!r}: use one of {OUTCOMES}"
            )
        return out  # type: ignore[return-value]
    u = random.Random(f"{config.seed}|{rid}|{n}").random()
    for p, out in (
        (config.p500, "500"),
        (config.p429, "429"),
        (config.p_timeout, "hang"),
        (config.p_drop, "drop"),
    ):
        if u < p:
            return out  # type: ignore[return-value]
        u -= p
    return "ok"


class _Server:
    """The asyncio server; lives on one event loop."""

    def __init__(self, config: MockConfig) -> None:
        self.config = config
        self.counts: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.connections = 0
        self.unauthorized = 0
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        self._server = await asyncio.start_server(self._handle, host, port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        answered = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head[:-4].split(b"\r\n")
                method, target, _ = lines[0].decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    k, _, v = line.partition(b":")
                    headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
                body = await _read_body(reader, headers)
                ce = self.config.close_every
                last = bool(ce) and answered + 1 >= ce
                keep = await self._respond(method, target, headers, body, reader, writer, last)
                answered += 1
                if not keep or last:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            # stop() cancels open connections; finishing normally keeps asyncio's stream
            # callback from logging the cancellation as an unhandled error
            return
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _respond(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        last: bool = False,
    ) -> bool:
        """Answer one request; False when the connection must be closed. ``last``: this
        connection closes after this answer (``close_every``)."""
        cfg = self.config
        if method == "GET" and target.rstrip("/").endswith("/stats"):
            self._write(last, writer, 200, self.stats(), {})
            return True
        if method != "POST" or not target.rstrip("/").endswith("/chat/completions"):
            self._write(
                last, writer, 404, {"error": {"message": f"no route {method} {target}"}}, {}
            )
            return True
        try:
            req = json.loads(body)
        except ValueError:
            self._write(last, writer, 400, {"error": {"message": "body is not JSON"}}, {})
            return True
        if cfg.api_key is not None and headers.get("authorization") != f"Bearer {cfg.api_key}":
            self.unauthorized += 1
            self._write(last, writer, 401, {"error": {"message": "invalid API key (mock)"}}, {})
            return True
        rid = headers.get("x-request-id") or hashlib.sha1(body).hexdigest()[:16]
        n = self.counts[rid]
        self.counts[rid] = n + 1
        out = draw(cfg, rid, n)
        self.outcomes[out] += 1
        if out == "drop":
            return False
        if out == "hang":
            # answer nothing; end when the client gives up and closes (read returns EOF)
            with contextlib.suppress(asyncio.TimeoutError, ConnectionError):
                await asyncio.wait_for(reader.read(1), cfg.hang_s)
            return False
        if out == "429":
            self._write(
                last,
                writer,
                429,
                {"error": {"message": "rate limited (mock)"}},
                {"Retry-After": cfg.retry_after},
            )
            return True
        if out == "400":
            self._write(
                last,
                writer,
                400,
                {"error": {"message": "invalid request (mock): max_tokens too large"}},
                {},
            )
            return True
        if cfg.latency > 0:
            await asyncio.sleep(cfg.latency)
        if out == "500":
            self._write(last, writer, 500, {"error": {"message": "internal error (mock)"}}, {})
            return True
        text = cfg.text if cfg.text is not None else verdict_text(rid, cfg.seed)
        logprobs = None
        if req.get("logprobs"):
            top = top_logprobs(rid, cfg.seed, int(req.get("top_logprobs") or 1))
            text = top[0]["token"]
            logprobs = {"content": [{**top[0], "top_logprobs": top}]}
        prompt_tokens = (
            sum(len(str(m.get("content", ""))) for m in req.get("messages", ())) // 4 + 1
        )
        completion_tokens = len(text) // 4 + 1
        self._write(
            last,
            writer,
            200,
            {
                "id": f"chatcmpl-{rid}-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": req.get("model", "mock"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                        **({"logprobs": logprobs} if logprobs else {}),
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
            {},
        )
        return True

    def _write(
        self,
        last: bool,
        writer: asyncio.StreamWriter,
        status: int,
        obj: Any,
        extra: Mapping[str, str],
    ) -> None:
        cfg = self.config
        payload = json.dumps(obj).encode()
        hdr = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            "Content-Type: application/json",
        ]
        hdr += [f"{k}: {v}" for k, v in extra.items()]
        if cfg.close_every and not cfg.silent_close:
            hdr.append("Connection: close" if last else "Connection: keep-alive")
        if cfg.chunked:
            hdr.append("Transfer-Encoding: chunked")
            half = len(payload) // 2
            data = b"".join(
                f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n"
                for p in (payload[:half], payload[half:])
                if p
            )
            writer.write(
                ("\r\n".join(hdr) + "\r\n\r\n").encode() + data + b"0\r\nX-Trailer: 1\r\n\r\n"
            )
        else:
            hdr.append(f"Content-Length: {len(payload)}")
            writer.write(("\r\n".join(hdr) + "\r\n\r\n").encode() + payload)

    def stats(self) -> dict[str, Any]:
        """Request counts per id, outcomes, connections accepted."""
        return {
            "counts": dict(self.counts),
            "total": sum(self.counts.values()),
            "outcomes": dict(self.outcomes),
            "connections": self.connections,
            "unauthorized": self.unauthorized,
        }


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    n = int(headers.get("content-length", "0") or 0)
    return await reader.readexactly(n) if n else b""


class MockServer:
    """The mock server running on its own event loop in a background thread."""

    def __init__(self, config: MockConfig | None = None) -> None:
        self.config = config or MockConfig()
        self._srv = _Server(self.config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return self._srv.port

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> MockServer:
        """Start serving in a daemon thread; returns once the port is bound."""
        ready = threading.Event()
        error: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._stop = asyncio.Event()

            async def serve() -> None:
                try:
                    await self._srv.start()
                except BaseException as e:  # noqa: BLE001 - handed to the starting thread
                    error.append(e)
                    ready.set()
                    return
                ready.set()
                assert self._stop is not None
                await self._stop.wait()
                await self._srv.close()

            try:
                loop.run_until_complete(serve())
            finally:
                loop.close()

        self._thread = threading.Thread(target=main, name="mockserver", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("mock server did not start within 10 s")
        if error:
            raise error[0]
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._loop is not None and self._stop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)
        self._thread = None

    def counts(self) -> dict[str, int]:
        """Requests received per id (a copy)."""
        return dict(self._srv.counts)

    def stats(self) -> dict[str, Any]:
        """Counts, outcomes and connections (a copy)."""
        return self._srv.stats()

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _serve_forever(config: MockConfig, host: str, port: int) -> None:
    srv = _Server(config)
    bound = await srv.start(host, port)
    print(bound, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await srv.close()


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; prints the bound port on the first line of stdout."""
    ap = argparse.ArgumentParser(
        prog="python -m fakes.mockserver", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="port; 0 lets the OS choose (default)")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    ap.add_argument("--p500", type=float, default=0.0, help="rate of HTTP 500")
    ap.add_argument("--p429", type=float, default=0.0, help="rate of HTTP 429")
    ap.add_argument("--p-timeout", type=float, default=0.0, help="rate of hangs (client timeouts)")
    ap.add_argument("--p-drop", type=float, default=0.0, help="rate of dropped connections")
    ap.add_argument("--retry-after", default="0.05", help="Retry-After value sent with 429")
    ap.add_argument("--seed", type=int, default=0, help="fault seed")
    ap.add_argument("--chunked", action="store_true", help="chunked response bodies")
    ap.add_argument("--script", default="", help="JSON object: id -> list of outcomes")
    a = ap.parse_args(argv)
    config = MockConfig(
        latency=a.latency,
        p500=a.p500,
        p429=a.p429,
        p_timeout=a.p_timeout,
        p_drop=a.p_drop,
        retry_after=a.retry_after,
        seed=a.seed,
        chunked=a.chunked,
        script=json.loads(a.script) if a.script else {},
    )
    asyncio.run(_serve_forever(config, a.host, a.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
