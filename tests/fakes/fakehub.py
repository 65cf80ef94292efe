"""A small fake Hugging Face Hub for offline tests: repositories, commits, downloads and Jobs.

It serves, on 127.0.0.1 with a port from the OS, the endpoints that ``huggingface_hub`` 2.4
calls for what this project does (read from its source, not guessed):

- ``GET /api/whoami-v2``;
- ``POST /api/repos/create``; ``GET /api/<type>s/<repo>[/revision/<rev>]`` (repo info with sha);
- ``POST /api/<type>s/<repo>/preupload/<rev>`` (every file "regular": no LFS, no Xet);
- ``POST /api/<type>s/<repo>/commit/<rev>`` (NDJSON: header, file, deletedFile);
- ``HEAD``/``GET /[<type>s/]<repo>/resolve/<rev>/<path>`` (X-Repo-Commit, ETag, size);
- ``GET /api/<type>s/<repo>/tree/<rev>[/<path>]`` (``recursive``);
- ``POST /api/jobs/<ns>`` (create), ``GET /api/jobs/<ns>`` (list, ``label=k=v`` and ``stage``
  filters), ``GET /api/jobs/<ns>/<id>`` (inspect), ``GET .../logs`` (server-sent events,
  ``tail``), ``POST .../cancel``, ``POST .../duplicate`` (rerun).

Jobs are *emulated*: ``policy(spec)`` decides, per created job, whether it runs or stays in
SCHEDULING (stuck, with its creation time moved ``stuck_age_s`` into the past). A running job
executes its ``command`` in a subprocess on this machine, with the job's environment and secrets,
plus ``extra_env`` (the tests point ``HF_ENDPOINT`` back at this server and set the variable that
skips the job's install step, since the package is already installed here). Its output becomes
the job's logs; exit status 0 is COMPLETED, anything else ERROR. Each subprocess runs under a
time limit. Nothing here is used outside tests.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

Decision = Literal["run", "stuck"]
"""What the emulator does with a new job."""

USER = "tester"
"""The namespace every token belongs to."""


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Commit:
    """One commit of a fake repository."""

    sha: str
    """40-hex commit id."""
    files: dict[str, bytes]
    """The whole tree at this commit: path -> bytes."""
    message: str
    """Commit summary."""


@dataclass
class Repo:
    """A fake repository with linear history on ``main``."""

    repo_id: str
    """``owner/name``."""
    repo_type: str
    """model / dataset / space."""
    private: bool = False
    """Visibility flag (recorded only)."""
    commits: list[Commit] = field(default_factory=list)
    """Oldest first; the last is ``main``."""

    def at(self, revision: str) -> Commit | None:
        """The commit named by ``main`` or a (prefix of a) sha."""
        if not self.commits:
            return None
        if revision in ("main", "HEAD"):
            return self.commits[-1]
        for c in reversed(self.commits):
            if len(revision) >= 7 and c.sha.startswith(revision):
                return c
        return None


@dataclass
class Job:
    """A fake job and its emulated life."""

    id: str
    """Job id."""
    spec: dict[str, Any]
    """The job spec as posted (secrets included: kept in memory only, never returned)."""
    created: float
    """Creation time (epoch seconds; moved back for stuck jobs)."""
    stage: str = "SCHEDULING"
    """SCHEDULING / RUNNING / COMPLETED / ERROR / CANCELED."""
    message: str | None = None
    """Status message (the exit code for a failed job)."""
    started: float | None = None
    """When it started running."""
    finished: float | None = None
    """When it ended."""
    logs: list[tuple[float, str]] = field(default_factory=list)
    """(time, line) pairs of its output."""
    thread: threading.Thread | None = None
    """The emulation thread, when running."""
    proc: subprocess.Popen[str] | None = None
    """The subprocess, while running."""

    def to_json(self) -> dict[str, Any]:
        """The job as the Jobs API returns it (secret values never included)."""
        now = time.time()
        sched_end = self.started or self.finished or now
        durations: dict[str, Any] = {
            "schedulingSecs": int(sched_end - self.created),
            "runningSecs": int((self.finished or now) - self.started) if self.started else None,
            "totalSecs": int((self.finished or now) - self.created),
        }
        return {
            "id": self.id,
            "createdAt": _iso(self.created),
            "startedAt": _iso(self.started) if self.started else None,
            "finishedAt": _iso(self.finished) if self.finished else None,
            "dockerImage": self.spec.get("dockerImage"),
            "command": self.spec.get("command"),
            "arguments": self.spec.get("arguments", []),
            "environment": self.spec.get("environment", {}),
            "secrets": dict.fromkeys(self.spec.get("secrets") or {}),
            "flavor": self.spec.get("flavor"),
            "labels": self.spec.get("labels"),
            "status": {"stage": self.stage, "message": self.message},
            "durations": durations,
            "owner": {"id": "u-" + USER, "name": USER, "type": "user"},
        }


class FakeHub:
    """The fake Hub: start it, point ``HF_ENDPOINT`` at ``url``, stop it when done."""

    def __init__(
        self,
        *,
        policy: Callable[[Mapping[str, Any]], Decision] | None = None,
        extra_env: Mapping[str, str] | None = None,
        job_timeout_s: float = 60.0,
        stuck_age_s: float = 7200.0,
    ) -> None:
        self.policy: Callable[[Mapping[str, Any]], Decision] = policy or (lambda spec: "run")
        """Decides whether a new job runs or stays in SCHEDULING."""
        self.extra_env: dict[str, str] = dict(extra_env or {})
        """Added to every emulated job's environment (after the job's own)."""
        self.job_timeout_s = job_timeout_s
        """Wall-clock limit for one emulated job."""
        self.stuck_age_s = stuck_age_s
        """How far back a stuck job's creation time is moved."""
        self.repos: dict[tuple[str, str], Repo] = {}
        self.jobs: dict[str, Job] = {}
        self.requests: list[tuple[str, str]] = []
        """(method, path) of every request, for tests to inspect."""
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._server is not None, "start() the hub first"
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def start(self) -> FakeHub:
        """Listen on 127.0.0.1 (port chosen by the OS) in a background thread."""
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and kill any job still running."""
        with self.lock:
            procs = [j.proc for j in self.jobs.values() if j.proc is not None]
        for p in procs:
            if p.poll() is None:
                p.kill()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.wait_jobs(5.0)

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_jobs(self, timeout_s: float) -> bool:
        """Wait (bounded) for every running emulated job to end; True when none is left."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            threads = [j.thread for j in self.jobs.values() if j.thread is not None]
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in threads)

    # ------------------------------------------------------------------ repositories
    def repo(self, repo_type: str, repo_id: str) -> Repo | None:
        """The repository, or None."""
        return self.repos.get((repo_type, repo_id))

    def create_repo(self, repo_type: str, repo_id: str, private: bool = False) -> Repo:
        """Create an empty repository (idempotent)."""
        with self.lock:
            r = self.repos.get((repo_type, repo_id))
            if r is None:
                r = Repo(repo_id, repo_type, private)
                self.repos[(repo_type, repo_id)] = r
                # like the Hub: a new repository starts with one commit holding .gitattributes
                r.commits.append(
                    Commit(
                        hashlib.sha1(f"{repo_id}:init".encode()).hexdigest(),
                        {".gitattributes": b""},
                        "initial commit",
                    )
                )
            return r

    def commit(
        self,
        repo_type: str,
        repo_id: str,
        add: Mapping[str, bytes] | None = None,
        delete: tuple[str, ...] = (),
        message: str = "commit",
    ) -> str:
        """Add a commit (also used by tests to seed repositories); returns its sha."""
        with self.lock:
            r = self.create_repo(repo_type, repo_id)
            files = dict(r.commits[-1].files) if r.commits else {}
            for p in delete:
                for k in [k for k in files if k == p or k.startswith(p.rstrip("/") + "/")]:
                    del files[k]
            files.update(add or {})
            sha = hashlib.sha1(f"{repo_id}:{len(r.commits)}:{uuid.uuid4()}".encode()).hexdigest()
            r.commits.append(Commit(sha, files, message))
            return sha

    def file(self, repo_type: str, repo_id: str, path: str, revision: str = "main") -> bytes | None:
        """A file's bytes at a revision, or None."""
        r = self.repo(repo_type, repo_id)
        c = r.at(revision) if r else None
        return c.files.get(path) if c else None

    # ------------------------------------------------------------------ jobs
    def create_job(self, spec: dict[str, Any]) -> Job:
        """Record a job and start its emulation according to ``policy``."""
        decision = self.policy(spec)
        now = time.time()
        job = Job(id=uuid.uuid4().hex[:24], spec=spec, created=now)
        if decision == "stuck":
            job.created = now - self.stuck_age_s
        with self.lock:
            self.jobs[job.id] = job
        if decision == "run":
            job.thread = threading.Thread(target=self._run_job, args=(job,), daemon=True)
            job.thread.start()
        return job

    def _run_job(self, job: Job) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
        }
        env.update({k: str(v) for k, v in (job.spec.get("environment") or {}).items()})
        env.update({k: str(v) for k, v in (job.spec.get("secrets") or {}).items()})
        env.update(self.extra_env)
        cmd = list(job.spec.get("command") or []) + list(job.spec.get("arguments") or [])
        with self.lock:
            if job.stage != "SCHEDULING":
                return
            job.stage, job.started = "RUNNING", time.time()
        try:
            proc = subprocess.Popen(
                cmd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=env.get("HOME"),
            )
            job.proc = proc
            try:
                out, _ = proc.communicate(timeout=self.job_timeout_s)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                rc = -9
                out += f"\n[fakehub] killed after {self.job_timeout_s}s\n"
        except OSError as e:
            out, rc = f"[fakehub] cannot start {cmd!r}: {e}\n", 127
        t = time.time()
        with self.lock:
            job.logs.extend((t, line) for line in out.splitlines())
            job.proc = None
            if job.stage == "CANCELED":
                return
            job.finished = t
            job.stage = "COMPLETED" if rc == 0 else "ERROR"
            job.message = None if rc == 0 else f"exit code {rc}"

    def cancel_job(self, job_id: str) -> bool:
        """Cancel a job (kills its subprocess); False when unknown."""
        with self.lock:
            job = self.jobs.get(job_id)
            if job is None:
                return False
            if job.stage in ("SCHEDULING", "RUNNING"):
                job.stage, job.finished = "CANCELED", time.time()
            proc = job.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        return True


def _err(code: str, msg: str) -> dict[str, str]:
    return {"error": msg, "_code": code}


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the FakeHub held on the class."""

    hub: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    # ------------------------------------------------------------------ plumbing
    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(
        self,
        status: int,
        payload: Any = None,
        *,
        raw: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        ctype: str = "application/json",
    ) -> None:
        error_code = None
        if isinstance(payload, dict) and "_code" in payload:
            error_code = payload.pop("_code")
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if error_code:
            self.send_header("X-Error-Code", error_code)
            self.send_header("X-Error-Message", str(payload.get("error", "")))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and len(auth) > len("Bearer "):
            return True
        self._send(401, _err("Unauthorized", "Invalid credentials in Authorization header"))
        return False

    def _route(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        query = parse_qs(parts.query)
        self.hub.requests.append((method, path))
        body = self._body() if method == "POST" else b""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._dispatch(method, path, query, body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._route("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._route("HEAD")

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST")

    # ------------------------------------------------------------------ routes
    def _dispatch(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        hub = self.hub
        if path == "/api/whoami-v2":
            if self._authorized():
                self._send(
                    200,
                    {
                        "type": "user",
                        "name": USER,
                        "fullname": "Test User",
                        "orgs": [],
                        "auth": {"type": "access_token", "accessToken": {"role": "write"}},
                    },
                )
            return
        if path == "/api/repos/create" and method == "POST":
            if not self._authorized():
                return
            d = json.loads(body or b"{}")
            repo_type = d.get("type") or "model"
            repo_id = f"{d.get('organization') or USER}/{d['name']}"
            exists = hub.repo(repo_type, repo_id) is not None
            hub.create_repo(
                repo_type, repo_id, d.get("visibility") == "private" or bool(d.get("private"))
            )
            prefix = "" if repo_type == "model" else f"{repo_type}s/"
            url = f"{hub.url}/{prefix}{repo_id}"
            if exists:
                self._send(409, {"error": "You already created this repo", "url": url})
            else:
                self._send(200, {"url": url, "name": repo_id, "id": repo_id})
            return
        if path.startswith("/api/jobs/"):
            self._jobs(method, path[len("/api/jobs/") :].split("/"), query, body)
            return
        if path.startswith("/api/"):
            self._api_repo(method, path[len("/api/") :], query, body)
            return
        if "/resolve/" in path and method in ("GET", "HEAD"):
            self._resolve(method, path)
            return
        self._send(404, _err("NotFound", f"no route for {method} {path}"))

    def _split_repo(self, rest: str) -> tuple[str, str, str] | None:
        """``datasets/owner/name/<tail>`` -> (type, repo_id, tail)."""
        segs = rest.split("/")
        if len(segs) < 3 or segs[0] not in ("models", "datasets", "spaces"):
            return None
        return segs[0][:-1], f"{segs[1]}/{segs[2]}", "/".join(segs[3:])

    def _api_repo(self, method: str, rest: str, query: dict[str, list[str]], body: bytes) -> None:
        hub = self.hub
        split = self._split_repo(rest)
        if split is None:
            self._send(404, _err("NotFound", f"no route for /api/{rest}"))
            return
        repo_type, repo_id, tail = split
        repo = hub.repo(repo_type, repo_id)
        if repo is None:
            self._send(404, _err("RepoNotFound", f"Repository {repo_id} not found"))
            return
        op, _, arg = tail.partition("/")
        if method == "GET" and op in ("", "revision"):
            c = repo.at(unquote(arg) if op else "main")
            if c is None and op:
                self._send(404, _err("RevisionNotFound", f"Invalid rev id: {arg}"))
                return
            self._send(
                200,
                {
                    "id": repo_id,
                    "_id": repo_id,
                    "private": repo.private,
                    "sha": c.sha if c else None,
                    "siblings": [{"rfilename": p} for p in sorted(c.files)] if c else [],
                    "tags": [],
                },
            )
            return
        if method == "POST" and op == "preupload":
            if not self._authorized():
                return
            files = json.loads(body).get("files", [])
            self._send(
                200,
                {
                    "files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                        for f in files
                    ],
                    "commitOid": repo.commits[-1].sha if repo.commits else None,
                },
            )
            return
        if method == "POST" and op == "commit":
            if not self._authorized():
                return
            self._commit(repo, body)
            return
        if method == "GET" and op == "tree":
            rev, _, sub = arg.partition("/")
            c = repo.at(unquote(rev))
            if c is None:
                self._send(404, _err("RevisionNotFound", f"Invalid rev id: {rev}"))
                return
            self._tree(c, unquote(sub), query.get("recursive", ["False"])[0].lower() == "true")
            return
        self._send(404, _err("NotFound", f"no route for {method} /api/{rest}"))

    def _commit(self, repo: Repo, body: bytes) -> None:
        add: dict[str, bytes] = {}
        delete: list[str] = []
        summary = "commit"
        for line in body.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                summary = value.get("summary", summary)
            elif key == "file":
                content = value["content"]
                add[value["path"]] = (
                    base64.b64decode(content)
                    if value.get("encoding") == "base64"
                    else content.encode()
                )
            elif key in ("deletedFile", "deletedFolder"):
                delete.append(value["path"])
            else:
                self._send(400, _err("BadRequest", f"fake hub does not support {key!r} operations"))
                return
        sha = self.hub.commit(repo.repo_type, repo.repo_id, add, tuple(delete), summary)
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        self._send(
            200,
            {
                "commitUrl": f"{self.hub.url}/{prefix}{repo.repo_id}/commit/{sha}",
                "commitOid": sha,
                "pullRequestUrl": None,
            },
        )

    def _tree(self, c: Commit, sub: str, recursive: bool) -> None:
        sub = sub.strip("/")
        prefix = sub + "/" if sub else ""
        if sub and sub not in c.files and not any(p.startswith(prefix) for p in c.files):
            self._send(404, _err("EntryNotFound", f"{sub} does not exist"))
            return
        entries: dict[str, dict[str, Any]] = {}
        for p, data in sorted(c.files.items()):
            if not p.startswith(prefix):
                continue
            rel = p[len(prefix) :]
            if not recursive and "/" in rel:
                folder = prefix + rel.split("/", 1)[0]
                entries.setdefault(folder, {"type": "directory", "path": folder, "oid": "0" * 40})
                continue
            if recursive:
                segs = rel.split("/")[:-1]
                for i in range(1, len(segs) + 1):
                    folder = prefix + "/".join(segs[:i])
                    entries.setdefault(
                        folder, {"type": "directory", "path": folder, "oid": "0" * 40}
                    )
            entries[p] = {
                "type": "file",
                "path": p,
                "size": len(data),
                "oid": hashlib.sha1(data).hexdigest(),
            }
        self._send(200, list(entries.values()))

    def _resolve(self, method: str, path: str) -> None:
        segs = path.lstrip("/").split("/")
        if segs[0] in ("datasets", "spaces"):
            repo_type, segs = segs[0][:-1], segs[1:]
        else:
            repo_type = "model"
        if len(segs) < 5 or segs[2] != "resolve":
            self._send(404, _err("NotFound", f"bad resolve path {path}"))
            return
        repo_id, rev, fpath = f"{segs[0]}/{segs[1]}", unquote(segs[3]), unquote("/".join(segs[4:]))
        repo = self.hub.repo(repo_type, repo_id)
        if repo is None:
            self._send(404, _err("RepoNotFound", f"Repository {repo_id} not found"))
            return
        c = repo.at(rev)
        if c is None:
            self._send(404, _err("RevisionNotFound", f"Invalid rev id: {rev}"))
            return
        data = c.files.get(fpath)
        if data is None:
            self._send(
                404,
                _err("EntryNotFound", f"{fpath} does not exist"),
                headers={"X-Repo-Commit": c.sha},
            )
            return
        etag = hashlib.sha1(data).hexdigest()
        self._send(
            200,
            raw=data,
            ctype="application/octet-stream",
            headers={"X-Repo-Commit": c.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"},
        )

    # ------------------------------------------------------------------ jobs routes
    def _jobs(self, method: str, segs: list[str], query: dict[str, list[str]], body: bytes) -> None:
        hub = self.hub
        if not self._authorized():
            return
        ns, rest = segs[0], segs[1:]
        if ns != USER:
            self._send(403, _err("Forbidden", f"no access to namespace {ns}"))
            return
        if not rest and method == "POST":
            spec = json.loads(body)
            created = hub.create_job(spec)
            self._send(200, created.to_json())
            return
        if not rest and method == "GET":
            want = [v.split("=", 1) for v in query.get("label", [])]
            stages = set(query.get("stage", []))
            with hub.lock:
                out = [
                    x.to_json()
                    for x in sorted(hub.jobs.values(), key=lambda x: x.created)
                    if all((x.spec.get("labels") or {}).get(k) == v for k, v in want)
                    and (not stages or x.stage in stages)
                ]
            self._send(200, out)
            return
        job = hub.jobs.get(rest[0]) if rest else None
        if job is None:
            self._send(404, _err("NotFound", f"job {rest[0] if rest else ''} not found"))
            return
        action = rest[1] if len(rest) > 1 else ""
        if method == "GET" and not action:
            with hub.lock:
                self._send(200, job.to_json())
            return
        if method == "GET" and action == "logs":
            tail = int(query["tail"][0]) if "tail" in query else None
            with hub.lock:
                lines = list(job.logs)
            if tail is not None:
                lines = lines[-tail:] if tail > 0 else []
            events = [(job.created, "===== Job started =====")] if job.started else []
            events += lines
            data = "".join(
                "data: " + json.dumps({"timestamp": _iso(t), "data": line}) + "\n\n"
                for t, line in events
            ).encode()
            self._send(200, raw=data, ctype="text/event-stream")
            return
        if method == "POST" and action == "cancel":
            hub.cancel_job(job.id)
            self._send(200, {})
            return
        if method == "POST" and action == "duplicate":
            new = hub.create_job(dict(job.spec))
            self._send(200, new.to_json())
            return
        self._send(404, _err("NotFound", f"no route for {method} jobs/{'/'.join(segs)}"))
