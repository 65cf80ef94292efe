"""Pinned downloads against a real HTTP server on 127.0.0.1, including a tampered file."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.core.errors import DataError, IntegrityError
from bench.sources import get
from bench.sources.base import ExtractResult, Source, Upstream, UpstreamFile
from bench.sources.download import fetch, file_url


class _Pinned(Source):
    """A throwaway source whose pins are set per test (not registered)."""

    name = "pinned"
    folder = "pinned"
    license = "CC0-1.0"
    redistributable = True

    def __init__(self, files: dict[str, bytes | None], served: Path) -> None:
        self.upstream = Upstream(
            repo="https://example.invalid/repo",
            commit="0" * 40,
            raw_url="https://example.invalid/{commit}/{path}",
            files=tuple(
                UpstreamFile(p, hashlib.sha256(b).hexdigest() if b is not None else None)
                for p, b in files.items()
            ),
        )

    def extract(self, path: Path) -> ExtractResult:
        return ExtractResult()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, served folder): http.server on 127.0.0.1 in a thread."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_Quiet, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", served
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(timeout=5)


def _serve(served: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = served / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


GOOD = {"data/a.json": b'[{"id": 1}]\n', "data/sub/b.json": b"[]\n"}


def test_fetch_verifies_and_writes(server: tuple[str, Path], tmp_path: Path) -> None:
    base, served = server
    _serve(served, GOOD)
    src = _Pinned(dict(GOOD), served)
    dest = tmp_path / "dest"
    got = fetch(src, dest, base_url=base, timeout=5)
    assert [p.relative_to(dest).as_posix() for p in got] == list(GOOD)
    for rel, data in GOOD.items():
        assert (dest / rel).read_bytes() == data
    # present and valid: not fetched again (the server no longer has them)
    for rel in GOOD:
        (served / rel).unlink()
    assert len(fetch(src, dest, base_url=base, timeout=5)) == 2


def test_tampered_file_is_refused_and_not_written(server: tuple[str, Path], tmp_path: Path) -> None:
    base, served = server
    _serve(served, {**GOOD, "data/sub/b.json": b'[{"id": "evil"}]\n'})
    src = _Pinned(dict(GOOD), served)
    dest = tmp_path / "dest"
    with pytest.raises(IntegrityError) as e:
        fetch(src, dest, base_url=base, timeout=5)
    msg = str(e.value)
    assert "data/sub/b.json" in msg and "does not match" in msg and "do not use it" in msg
    assert not (dest / "data/sub/b.json").exists()
    assert not any(p.name.endswith(".part") for p in dest.rglob("*"))
    assert (dest / "data/a.json").read_bytes() == GOOD["data/a.json"]


def test_stale_local_copy_is_replaced(server: tuple[str, Path], tmp_path: Path) -> None:
    base, served = server
    _serve(served, GOOD)
    dest = tmp_path / "dest"
    (dest / "data").mkdir(parents=True)
    (dest / "data/a.json").write_bytes(b"old")
    fetch(_Pinned(dict(GOOD), served), dest, base_url=base, timeout=5)
    assert (dest / "data/a.json").read_bytes() == GOOD["data/a.json"]


def test_missing_file_and_unpinned_hash(server: tuple[str, Path], tmp_path: Path) -> None:
    base, served = server
    _serve(served, {"data/a.json": GOOD["data/a.json"]})
    with pytest.raises(DataError, match="HTTP 404"):
        fetch(_Pinned({"data/gone.json": b"x"}, served), tmp_path / "d1", base_url=base, timeout=5)
    got = fetch(_Pinned({"data/a.json": None}, served), tmp_path / "d2", base_url=base, timeout=5)
    assert got[0].read_bytes() == GOOD["data/a.json"]


def test_path_escaping_the_destination_is_refused(server: tuple[str, Path], tmp_path: Path) -> None:
    base, served = server
    with pytest.raises(IntegrityError, match="escapes"):
        fetch(_Pinned({"../outside.json": b"x"}, served), tmp_path / "d", base_url=base, timeout=5)


def test_real_pins_build_raw_urls() -> None:
    for name in ("rjudge", "stepshield", "assebench"):
        src = get(name)
        assert src.upstream is not None and len(src.upstream.commit) == 40
        f = src.upstream.files[0]
        url = file_url(src, f)
        assert url.startswith("https://raw.githubusercontent.com/") and src.upstream.commit in url
        assert url.endswith(f.path)
        assert all(x.sha256 and len(x.sha256) == 64 for x in src.upstream.files)
