"""Download a source's pinned upstream files and verify them against their sha256.

Each file is fetched from the upstream's ``raw_url`` template (``{commit}`` and ``{path}``
filled in) or, for tests and mirrors, from ``base_url + path``; it is hashed while it streams to
a temporary file beside its destination and renamed into place only when the hash matches. A
mismatch leaves nothing behind and raises ``IntegrityError``. Files already present with the
right hash are not fetched again.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.errors import DataError, IntegrityError
from bench.core.jsonl import sha256_file
from bench.sources.base import Source, UpstreamFile

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0
"""Seconds allowed for connecting and for each read."""


def file_url(source: Source, f: UpstreamFile, base_url: str | None = None) -> str:
    """Where ``f`` is fetched from: ``base_url + path`` when given, else the pinned raw URL."""
    if base_url is not None:
        return base_url.rstrip("/") + "/" + f.path
    up = source.upstream
    if up is None or not up.raw_url:
        raise DataError(f"source {source.name!r} has no pinned upstream to download from")
    return up.raw_url.format(commit=up.commit, path=f.path)


def fetch(
    source: Source,
    dest: str | os.PathLike[str],
    *,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Path]:
    """Download every pinned file of ``source`` under ``dest`` (paths kept), verifying sha256.

    Returns the paths written or found already valid. Raises IntegrityError on a hash mismatch
    (the bad bytes are never written) and DataError when a file cannot be fetched.
    """
    import httpx  # deferred: only downloads need it

    up = source.upstream
    if up is None:
        raise DataError(f"source {source.name!r} is the project's own corpus: nothing to download")
    root = Path(dest)
    out: list[Path] = []
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        for f in up.files:
            target = _safe_target(root, f.path)
            if f.sha256 and target.is_file() and sha256_file(target) == f.sha256:
                log.debug("%s: present, hash ok", f.path)
                out.append(target)
                continue
            url = file_url(source, f, base_url)
            log.info("fetching %s", url)
            _download(client, url, target, f, source.name)
            out.append(target)
    return out


def _safe_target(root: Path, rel: str) -> Path:
    """``root / rel``, refusing a pinned path that would escape ``root``."""
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise IntegrityError(f"pinned path {rel!r} escapes {root}; fix the pin file")
    return target


def _download(client: httpx.Client, url: str, target: Path, f: UpstreamFile, name: str) -> None:
    import httpx

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.part")
    h = hashlib.sha256()
    try:
        with client.stream("GET", url) as r:
            if r.status_code != 200:
                raise DataError(
                    f"{url}: HTTP {r.status_code}; check the network, or fetch {f.path} by hand "
                    f"into {target.parent}"
                )
            with tmp.open("wb") as fh:
                for chunk in r.iter_bytes():
                    h.update(chunk)
                    fh.write(chunk)
        got = h.hexdigest()
        if f.sha256 and got != f.sha256:
            raise IntegrityError(
                f"{f.path}: sha256 {got} does not match the pinned {f.sha256} (from {url}); the "
                f"file was not written. Upstream changed or the download was tampered with: do "
                f"not use it; check the pin in bench/sources/pins/{name}.json against the "
                "upstream commit"
            )
        if not f.sha256:
            log.warning("%s: no pinned hash, accepted unverified (sha256 %s)", f.path, got)
        os.replace(tmp, target)
    except httpx.HTTPError as e:
        raise DataError(f"{url}: download failed ({e}); check the network or the URL") from e
    finally:
        if tmp.exists():
            tmp.unlink()
