"""A minimal asyncio HTTP/1.1 client with a keep-alive connection pool.

Why not httpx or an SDK: the runner benchmark needs well under 1 ms of harness CPU per decision,
and per request httpx.AsyncClient spends 0.8 to 3.7 ms and the openai SDK about 3.4 ms of CPU
(docs/runner-benchmark.md has the measurements). This client does only what a JSON API call
needs: one request per connection at a time, keep-alive reuse, ``Content-Length`` and
``chunked`` response bodies, bodies delimited by the server closing, ``Connection: close``,
1xx interim answers skipped, a stale pooled connection (closed by the server while idle)
discarded before use, TLS through ``ssl``, and one overall timeout per request. No proxies, no
redirects, no HTTP/2, no compression: the ``openai`` backend uses httpx when a proxy is set.

A POST is never re-sent on its own: when a connection fails before the answer, the error goes up
(``ConnectionError`` or ``asyncio.IncompleteReadError``) and the runner decides about retrying,
so every request the server sees is one counted attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl as _ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_BODY = 64 << 20
"""Largest response body accepted (bytes)."""

MAX_HEAD = 64 << 10
"""Largest response head (status line + headers) accepted (bytes)."""


class ProtocolError(ConnectionError):
    """The server's answer is not valid HTTP/1.1 (or exceeds the size limits)."""


@dataclass(frozen=True)
class Response:
    """One HTTP answer."""

    status: int
    """Status code."""
    headers: dict[str, str]
    """Header names lower-cased; a repeated header keeps its values joined with ', '."""
    body: bytes
    """The whole body, de-chunked."""


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        # a server that closed an idle keep-alive connection has fed EOF by now: the event loop
        # ran between the answer and this reuse
        return not (self.reader.at_eof() or self.writer.is_closing() or self.reader.exception())

    def abort(self) -> None:
        self.writer.transport.abort()


def _check_header(name: str, value: str) -> None:
    bad = ("\r", "\n", "\0")
    if any(c in name or c in value for c in bad) or not name or ":" in name or " " in name:
        raise ValueError(f"invalid HTTP header {name!r}: no CR, LF, NUL, colon or space allowed")


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one origin (``scheme://host:port``)."""

    def __init__(
        self,
        base_url: str,
        *,
        max_connections: int = 32,
        headers: dict[str, str] | None = None,
        ssl_context: _ssl.SSLContext | None = None,
    ) -> None:
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"base_url {base_url!r}: scheme must be http or https")
        if not u.hostname:
            raise ValueError(f"base_url {base_url!r} has no host")
        self.host = u.hostname
        self.tls = u.scheme == "https"
        self.port = u.port or (443 if self.tls else 80)
        self.prefix = u.path.rstrip("/")
        """Path prefix of base_url, prepended to every request path."""
        self._ssl = (ssl_context or _ssl.create_default_context()) if self.tls else None
        default_port = self.port == (443 if self.tls else 80)
        host_hdr = self.host if ":" not in self.host else f"[{self.host}]"
        if not default_port:
            host_hdr += f":{self.port}"
        static = {"Host": host_hdr, "Connection": "keep-alive", **(headers or {})}
        for k, v in static.items():
            _check_header(k, v)
        self._static = "".join(f"{k}: {v}\r\n" for k, v in static.items()).encode("latin-1")
        self._idle: list[_Conn] = []
        self._sem = asyncio.Semaphore(max_connections)
        self._closed = False

    async def _connect(self) -> _Conn:
        reader, writer = await asyncio.open_connection(
            self.host,
            self.port,
            ssl=self._ssl,
            server_hostname=self.host if self._ssl else None,
            limit=MAX_HEAD,
        )
        return _Conn(reader, writer)

    def _take(self) -> _Conn | None:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
            conn.abort()
        return None

    async def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        *,
        headers: tuple[tuple[str, str], ...] = (),
        timeout: float | None = None,
    ) -> Response:
        """Send one request and read the whole answer; ``timeout`` bounds connect, send and
        receive together (``TimeoutError`` when exceeded). Header values are checked for CR/LF.
        """
        if self._closed:
            raise RuntimeError("connection pool is closed")
        extra = b""
        if headers:
            for k, v in headers:
                _check_header(k, v)
            extra = "".join(f"{k}: {v}\r\n" for k, v in headers).encode("latin-1")
        head = (
            f"{method} {self.prefix}{path} HTTP/1.1\r\nContent-Length: {len(body)}\r\n".encode(
                "latin-1"
            )
            + self._static
            + extra
            + b"\r\n"
        )
        async with self._sem:
            conn = None
            try:
                async with asyncio.timeout(timeout):
                    conn = self._take() or await self._connect()
                    conn.writer.write(head + body if len(body) < 65536 else head)
                    if len(body) >= 65536:
                        conn.writer.write(body)
                    await conn.writer.drain()
                    resp, keep = await _read_response(conn.reader, method)
            except BaseException:
                if conn is not None:
                    conn.abort()
                raise
            if keep and not self._closed:
                self._idle.append(conn)
            else:
                conn.abort()
            return resp

    async def aclose(self) -> None:
        """Close every idle connection; in-flight ones close when they finish."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.writer.close()
        for conn in idle:
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(conn.writer.wait_closed(), 1.0)


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[Response, bool]:
    """Read one answer; returns it and whether the connection may be reused."""
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError as e:
            raise ProtocolError(f"response head larger than {MAX_HEAD} bytes") from e
        lines = head[:-4].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        try:
            status = int(parts[1])
        except ValueError:
            raise ProtocolError(f"bad status code in {lines[0][:80]!r}") from None
        if 100 <= status < 200 and status != 101:
            continue  # interim answer (100 Continue, 103 Early Hints): the real one follows
        break
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            raise ProtocolError(f"malformed header line {line[:80]!r}")
        k = name.strip().lower().decode("latin-1")
        v = value.strip().decode("latin-1")
        headers[k] = f"{headers[k]}, {v}" if k in headers else v
    conn_hdr = headers.get("connection", "").lower()
    keep = "close" not in conn_hdr if parts[0] == b"HTTP/1.1" else "keep-alive" in conn_hdr
    if method == "HEAD" or status in (204, 304):
        return Response(status, headers, b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        try:
            n = int(headers["content-length"])
        except ValueError:
            raise ProtocolError(f"bad Content-Length {headers['content-length']!r}") from None
        if n < 0 or n > MAX_BODY:
            raise ProtocolError(f"Content-Length {n} out of range (limit {MAX_BODY})")
        body = await reader.readexactly(n)
    else:
        # delimited by the server closing the connection
        body = await reader.read(MAX_BODY + 1)
        chunks = [body]
        total = len(body)
        while body:
            body = await reader.read(MAX_BODY + 1)
            chunks.append(body)
            total += len(body)
            if total > MAX_BODY:
                raise ProtocolError(f"response body larger than {MAX_BODY} bytes")
        return Response(status, headers, b"".join(chunks)), False
    return Response(status, headers, body), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size line {line[:40]!r}") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailer fields: ignored
            return b"".join(chunks)
        total += size
        if total > MAX_BODY:
            raise ProtocolError(f"response body larger than {MAX_BODY} bytes")
        chunks.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise ProtocolError("chunk not followed by CRLF")
