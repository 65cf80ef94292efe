"""What the Space reads: outputs of ``bench/leaderboard.py`` plus the built dataset's text.
Nothing here scores and nothing here shapes a tab (``tabs.py``, ``views.py`` do): every number
comes from ``leaderboard.json``; the per-decision verdicts and raw outputs come from the
predictions files it names, the gold labels from ``ground_truth.jsonl``, the reviewers' notes
from ``reviews/*.jsonl``, the text from the built dataset's ``decision_points.jsonl``.

Where the results come from: ``leaderboards/`` beside this folder, or, when the environment
variable ``FORESIGHT_RESULTS_REPO`` names a Hub dataset, that dataset (same layout as
``leaderboards/``), downloaded with ``huggingface_hub.snapshot_download``.

Where the text comes from: ``data/build/<version>/`` beside this folder (``bench/build.py``), or,
when ``FORESIGHT_DATASET_REPO`` names a Hub dataset (the one ``build.py --push-to-hub`` wrote),
that dataset. A source the build manifest marks as not redistributable (R-Judge) is shown only
from a local build whose raw data is present on this machine, never on the Hub.

This module runs on the Hub from the ``space/`` folder alone, so it needs only the standard
library, pandas and huggingface_hub; ``bench`` is used when it is importable (a checkout).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fmt import md_escape

log = logging.getLogger(__name__)

RESULTS_ENV = "FORESIGHT_RESULTS_REPO"
"""Names the Hub dataset holding the leaderboard outputs (layout of ``leaderboards/``)."""
DATASET_ENV = "FORESIGHT_DATASET_REPO"
"""Names the Hub dataset holding the built benchmark (for the text in Browse)."""
RESULT_FILES = [
    f"{pre}{name}"
    for pre in ("", "leaderboards/")
    for name in (
        "*.json", "*.jsonl", "*.csv", "*.npz", "parts/*.json", "plots/*.png", "predictions/**",
        "reviews/*.jsonl",
    )
]  # fmt: skip
"""What the Space downloads from the results dataset (not the job wheels and plans)."""
SCHEMA = "foresight-leaderboard/2"
"""The leaderboard.json layout this Space reads (docs/metrics.md)."""
ROWS_SCHEMA = "foresight-leaderboard-rows/1"
"""The leaderboard_rows.json layout this Space reads: the boards as table-ready rows."""

SPACE_DIR = Path(__file__).resolve().parent
REPO_ROOT = SPACE_DIR.parent
DEFAULT_RESULTS = REPO_ROOT / "leaderboards"
DEFAULT_BUILD = REPO_ROOT / "data" / "build"
DEFAULT_REVIEWS = REPO_ROOT / "data" / "reviews"
POINTS_FILE = "decision_points.jsonl"

ALL = "All"
"""The 'no filter' choice of the source and category filters."""


class SpaceDataError(Exception):
    """Results cannot be read; the message says what to run."""


class MixedGeneration(SpaceDataError):
    """A file does not carry the sha256 that the leaderboard.json in hand names for it: it
    belongs to another run of leaderboard.py (one in progress, or a copy mixing two runs)."""


_IO_ADVICE = {
    errno.ENOENT: "is missing: the results folder is incomplete; regenerate it with "
    "`python bench/leaderboard.py` or copy the whole folder",
    errno.EACCES: "cannot be read (permission denied): give the Space's user read access "
    "to the results folder",
    errno.EPERM: "cannot be read (operation not permitted): give the Space's user read "
    "access to the results folder",
    errno.ENOSPC: "cannot be stored: the disk is full; free space (or the Hub cache, "
    "HF_HOME) and restart the Space",
    errno.EROFS: "cannot be stored: the file system is read-only; point HF_HOME at a "
    "writable folder and restart the Space",
}
"""What to do about an I/O error on a results file, by errno (``io_error``)."""


def io_error(path: Path | str, e: OSError) -> SpaceDataError:
    """One sentence for an I/O error on ``path`` (missing, permission, full disk, read-only
    file system), naming the path and what to do; no traceback for the page."""
    advice = _IO_ADVICE.get(e.errno or 0, f"cannot be read ({e.strerror or e})")
    return SpaceDataError(f"{path} {advice}")


def read_bytes(path: Path) -> bytes:
    """A results file's bytes; SpaceDataError (``io_error``) when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise io_error(path, e) from None


def on_hub() -> bool:
    """True when running as a Hugging Face Space (the platform sets SPACE_ID)."""
    return bool(os.environ.get("SPACE_ID"))


def _snapshot(repo: str, patterns: list[str]) -> Path:
    """Download the matching files of a Hub dataset; the caller decides what a failure means."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id=repo, repo_type="dataset", allow_patterns=patterns))


def revision_of(path: Path) -> str:
    """The commit a Hub snapshot folder was downloaded at (its ``snapshots/<sha>`` name), or
    'unknown'."""
    parts = path.resolve().parts
    if "snapshots" in parts and parts.index("snapshots") + 1 < len(parts):
        return parts[parts.index("snapshots") + 1][:12]
    return "unknown"


# --------------------------------------------------------------------------- JSONL


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    """Rows of a JSONL file; a torn final line is skipped, a bad line elsewhere logged."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if i != len(lines) - 1:
                log.warning("%s line %d is not JSON; skipped", path, i + 1)


def _lines_at(path: Path) -> Iterator[tuple[int, Any]]:
    """(byte offset, parsed line) per line that parses; torn lines (a writer appends, so the last
    may be cut) are skipped. The offsets let one line be read again later with ``_line_at``."""
    with path.open("rb") as f:
        pos = 0
        for line in f:
            start, pos = pos, pos + len(line)
            try:
                yield start, json.loads(line)
            except json.JSONDecodeError:
                continue


def _line_at(path: Path, offset: int) -> dict[str, Any]:
    """The JSON line starting at ``offset``."""
    with path.open("rb") as f:
        f.seek(offset)
        d: dict[str, Any] = json.loads(f.readline())
    return d


# --------------------------------------------------------------------------- results


class PartCache:
    """The part files of one leaderboard.json (one generation), read on first use, each
    checked against the sha256 its manifest names, then kept. Thread-safe."""

    def __init__(self, root: Path, manifest: Mapping[str, str] | None) -> None:
        self.root = root
        self.manifest = manifest
        """{path: sha256} from leaderboard.json's ``files``; None for outputs without one."""
        self.loaded: dict[str, Mapping[str, Any]] = {}
        """Part path -> its document, in the order they were read (tests look at this)."""
        self._lock = threading.Lock()

    def verified(self, rel: str) -> bytes:
        """A file of this generation's set; MixedGeneration when its sha256 is not the one
        leaderboard.json names."""
        path = self.root / rel
        data = read_bytes(path)
        if self.manifest is not None:
            want = self.manifest.get(rel)
            if want is None or hashlib.sha256(data).hexdigest() != want:
                raise MixedGeneration(
                    f"{path} does not belong to the leaderboard.json in hand (its sha256 is not "
                    "the one leaderboard.json names): a regeneration is in progress or the folder "
                    "mixes two runs; reload the page in a moment, or rerun "
                    "`python bench/leaderboard.py`"
                )
        return data

    def get(self, rel: str) -> Mapping[str, Any]:
        """One part document, read once."""
        with self._lock:
            if rel not in self.loaded:
                doc = json.loads(self.verified(rel))
                if not isinstance(doc, dict):
                    raise SpaceDataError(f"{self.root / rel} is not a JSON object: regenerate it")
                self.loaded[rel] = doc
            return self.loaded[rel]


class LazyDoc(Mapping[str, Any]):
    """A JSON document leaderboard.py cut into a head and part files (``parts`` {name: path}):
    a key held in a part file is read on first access (``PartCache``), so a reader pays for a
    breakdown only when it asks for it. Iteration and ``in`` read nothing."""

    def __init__(self, head: Mapping[str, Any], cache: PartCache) -> None:
        self.head = head
        self.cache = cache
        self._parts = {k: v for k, v in (head.get("parts") or {}).items() if "." not in k}

    def __getitem__(self, key: str) -> Any:
        if key in self.head:
            return self.head[key]
        if key in self._parts:
            return self.cache.get(self._parts[key])[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self.head or key in self._parts

    def __iter__(self) -> Iterator[str]:
        yield from self.head
        yield from (k for k in self._parts if k not in self.head)

    def __len__(self) -> int:
        return len(set(self.head) | set(self._parts))


@dataclass(frozen=True)
class Results:
    """The leaderboard outputs of one generation (one leaderboard.json), read."""

    root: Path
    """Folder holding leaderboard.json, plots/, predictions/, ground_truth.jsonl."""
    origin: str
    """Where they came from, for the page ('local folder …' or 'Hub dataset …')."""
    report: Mapping[str, Any]
    """leaderboard.json; keys held in part files are read on first access (``LazyDoc``)."""
    ground_truth: Mapping[str, Mapping[str, Any]]
    """Decision point id -> ground-truth row (ids and labels only); {} when absent."""
    meta: Mapping[str, Any]
    """ground_truth.meta.json; {} when absent."""
    reviews_dir: Path | None
    """Folder of reviews/<reviewer>.jsonl (rationales), when present."""
    rows: Mapping[str, Any] = field(default_factory=dict)
    """leaderboard_rows.json: every board as rows with formatted margins, intervals and the
    judges' order per rank metric, and the metric columns' definitions (boards other than
    ``all`` and ``lite`` and the pairs' board are read on first use)."""
    generation: str = ""
    """sha256 of the leaderboard.json read: what a reload compares."""
    parts: PartCache | None = field(default=None, repr=False, compare=False)
    """The part files read so far (None without part files)."""
    _verdicts: dict[str, JudgeVerdicts] = field(default_factory=dict, repr=False, compare=False)
    """Cache: judge id -> its predictions, read on first use."""

    @property
    def judges(self) -> list[Mapping[str, Any]]:
        """Ranked judges in table order."""
        return list(self.report["judges"])

    @property
    def probes(self) -> list[Mapping[str, Any]]:
        """Shortcut probes (reference lines, never ranked), best first."""
        return list(self.report.get("probes", []))

    @property
    def everyone(self) -> list[Mapping[str, Any]]:
        """Ranked judges, then probes."""
        return [*self.judges, *self.probes]

    def judge(self, jid: str) -> Mapping[str, Any]:
        """One judge's or probe's entry; SpaceDataError when unknown."""
        for e in self.everyone:
            if e["id"] == jid:
                return e
        raise SpaceDataError(f"judge {jid!r} is not on the leaderboard")

    def verdicts(self, jid: str) -> JudgeVerdicts:
        """A ranked judge's predictions (last decision line per id), read once."""
        if jid not in self._verdicts:
            rel = self.judge(jid)["predictions"]
            self._verdicts[jid] = JudgeVerdicts.read(self.root / "predictions" / rel)
        return self._verdicts[jid]

    def label(self, metric: str) -> str:
        """A metric's display label."""
        for m in self.report["metrics"]:
            if m["name"] == metric:
                return str(m["label"])
        return metric

    def higher_is_better(self, metric: str) -> bool:
        """Whether a larger value of ``metric`` is better (from the JSON)."""
        for m in self.report["metrics"]:
            if m["name"] == metric:
                return bool(m["higher_is_better"])
        raise SpaceDataError(f"unknown metric {metric!r}")

    def board(self, key: str) -> Mapping[str, Any]:
        """One board of leaderboard_rows.json (``all``, ``lite``, ``<kind>:<group>``); a
        group's board is read from its part file on first use."""
        boards = self.rows.get("boards") or {}
        if key in boards:
            return boards[key]
        rel = self.board_index.get(key)
        if rel is None or self.parts is None:
            raise SpaceDataError(f"no board {key!r} in leaderboard_rows.json")
        return self.parts.get(rel)["boards"][key]

    @property
    def board_index(self) -> Mapping[str, str]:
        """Board key -> the part file holding it, for boards not in leaderboard_rows.json."""
        return self.rows.get("board_index") or {}

    def groups(self, kind: str) -> list[str]:
        """The group names with a board of ``kind`` (source, category, subset, level),
        sorted, read from the board index (no part file is opened)."""
        boards = [*(self.rows.get("boards") or {}), *self.board_index]
        return sorted({k.split(":", 1)[1] for k in boards if k.startswith(f"{kind}:")})

    def verified_bytes(self, rel: str) -> bytes:
        """The bytes of another output of this generation (e.g. a binary file beside
        leaderboard.json), checked against its manifest: MixedGeneration when they belong to
        another run; SpaceDataError naming the path when unreadable."""
        if self.parts is None:
            return read_bytes(self.root / rel)
        return self.parts.verified(rel)

    @property
    def loaded_parts(self) -> list[str]:
        """The part files read so far, in reading order."""
        return list(self.parts.loaded) if self.parts else []

    def definition(self, metric: str) -> str:
        """A metric's one-line definition (the metric table of leaderboard_rows.json)."""
        for c in self.rows.get("columns") or []:
            if c["key"] == metric:
                return str(c["definition"])
        return ""

    def plot(self, key: str) -> str | None:
        """Path of the PNG leaderboard.json names under ``plots[key]``, when the file exists
        and is the one its manifest names (a plot of another run is not shown)."""
        rel = self.report.get("plots", {}).get(key)
        p = self.root / rel if rel else None
        if not p or not p.is_file():
            return None
        try:
            self.verified_bytes(str(rel))
        except SpaceDataError as e:
            log.warning("plot not shown: %s", e)
            return None
        return str(p)

    def redistributable(self, source: str) -> bool:
        """Whether the ground truth's meta says the source may be redistributed (unknown: no)."""
        cfg = self.meta.get("configs", {}).get(source, {})
        return bool(cfg.get("redistributable", False))

    def reviews(self, trajectory_id: str) -> list[Mapping[str, Any]]:
        """Every reviewer's entries on one trajectory, oldest first ([] without reviews)."""
        if self.reviews_dir is None or not self.reviews_dir.is_dir():
            return []
        out = []
        for p in sorted(self.reviews_dir.glob("*.jsonl")):
            out += [r for r in _jsonl(p) if r.get("trajectory_id") == trajectory_id]
        return sorted(out, key=lambda r: str(r.get("time", "")))


def results_root(local: Path | None = None) -> tuple[Path, str]:
    """(folder, description): the Hub dataset named by $FORESIGHT_RESULTS_REPO when set (always
    wins, so a deployed Space never reads a stale copy), else ``local``, else leaderboards/."""
    repo = os.environ.get(RESULTS_ENV, "").strip()
    if repo:
        try:
            path = _snapshot(repo, RESULT_FILES)
        except Exception as e:  # noqa: BLE001 - any hub failure gets the same advice
            raise SpaceDataError(
                f"cannot download the results dataset {repo!r} named by {RESULTS_ENV}: {e}; "
                f"check the name and HF_TOKEN, or unset {RESULTS_ENV} to read leaderboards/"
            ) from e
        if not (path / "leaderboard.json").is_file() and (path / "leaderboards").is_dir():
            path = path / "leaderboards"
        return path, f"Hub dataset `{repo}` at revision `{revision_of(path)}`"
    path = Path(local) if local else DEFAULT_RESULTS
    return path, f"local folder `{short_path(path)}`"


def short_path(path: Path) -> str:
    """A folder as the page names it: relative to the checkout when inside it, else its last
    two parts (no absolute server path on the page)."""
    p = path.resolve()
    try:
        return p.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return "/".join(p.parts[-2:])


REPOSITORY_ENV = "FORESIGHT_REPOSITORY_URL"
"""The project's repository URL (a Space setting), when leaderboard.json names none."""


def link_overrides() -> dict[str, str]:
    """The repository, judges.toml and pull-request links from ``$FORESIGHT_REPOSITORY_URL``."""
    repo = os.environ.get(REPOSITORY_ENV, "").strip().rstrip("/")
    if not repo:
        return {}
    return {
        "repository": repo,
        "judges_toml": f"{repo}/blob/main/judges.toml",
        "pull_requests": f"{repo}/pulls",
        "submit": f"{repo}/blob/main/docs/judges.md",
    }


def _parse(path: Path, data: bytes, schema: str) -> dict[str, Any]:
    """A JSON document leaderboard.py wrote; SpaceDataError when it is not JSON or of another
    schema."""
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as e:
        raise SpaceDataError(
            f"{path} is not valid JSON ({e.msg} at line {e.lineno}): regenerate it with "
            "`python bench/leaderboard.py`"
        ) from None
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        got = doc.get("schema") if isinstance(doc, dict) else None
        raise SpaceDataError(
            f"{path} has schema {got!r}, this Space reads {schema!r}: "
            "regenerate it with `python bench/leaderboard.py` or update the Space"
        )
    return doc


def _read_generation(root: Path) -> tuple[dict[str, Any], dict[str, Any], str, PartCache]:
    """(leaderboard.json, leaderboard_rows.json, sha256 of the first, its part cache): one
    consistent pair, the rows file checked against the manifest."""
    path = root / "leaderboard.json"
    if not path.is_file():
        raise SpaceDataError(
            f"no leaderboard at {path}: run `python bench/leaderboard.py` (it needs "
            "leaderboards/ground_truth.jsonl from `python bench/build.py` and predictions from "
            "`python bench/decide.py`), or pass --results"
        )
    data = read_bytes(path)
    report = _parse(path, data, SCHEMA)
    manifest = report.get("files")
    cache = PartCache(root, manifest if isinstance(manifest, dict) else None)
    rows_path = root / "leaderboard_rows.json"
    if not rows_path.is_file():
        raise SpaceDataError(
            f"no leaderboard_rows.json beside leaderboard.json in {root}: regenerate both with "
            "`python bench/leaderboard.py`"
        )
    rows = _parse(rows_path, cache.verified("leaderboard_rows.json"), ROWS_SCHEMA)
    return report, rows, hashlib.sha256(data).hexdigest(), cache


def load_results(root: Path, origin: str = "", reviews_dir: Path | None = None) -> Results:
    """Read leaderboard.json and leaderboard_rows.json (+ ground truth and meta when present);
    the part files are read when first asked for. SpaceDataError says how to produce them when
    leaderboard.json is missing, unreadable or of another schema; a rows file of another
    generation (a regeneration in progress) is retried once, then refused."""
    try:
        report, rows, generation, cache = _read_generation(root)
    except MixedGeneration:
        time.sleep(RETRY_WAIT_S)  # leaderboard.json is moved into place last: give it a moment
        report, rows, generation, cache = _read_generation(root)
    gt: dict[str, Mapping[str, Any]] = {}
    gt_path = root / "ground_truth.jsonl"
    if gt_path.is_file():
        try:
            gt = {str(r["id"]): r for r in _jsonl(gt_path)}
        except OSError as e:
            raise io_error(gt_path, e) from None
    meta_path = root / "ground_truth.meta.json"
    meta = json.loads(read_bytes(meta_path)) if meta_path.is_file() else {}
    if reviews_dir is None:
        for cand in (root / "reviews", DEFAULT_REVIEWS):
            if cand.is_dir():
                reviews_dir = cand
                break
    return Results(
        root=root,
        origin=origin or f"local folder `{short_path(root)}`",
        report=LazyDoc(report, cache),
        rows=LazyDoc(rows, cache),
        ground_truth=gt,
        meta=meta,
        reviews_dir=reviews_dir,
        generation=generation,
        parts=cache,
    )


RETRY_WAIT_S = 0.5
"""How long a reader waits before its one retry when it meets files of two generations."""
RELOAD_CHECK_S = 2.0
"""Least seconds between two looks at leaderboard.json's stat for a newer generation."""

T = TypeVar("T")


class ResultsStore:
    """The current generation of a results folder: ``current()`` looks at leaderboard.json's
    stat at most every ``check_every_s`` seconds and reads a newer generation when it changed
    (a failed read keeps the one in hand and logs why). ``call`` runs a reader on the current
    generation and, when it meets a part file of another generation, reloads and retries once;
    every read is of one generation, never a mix."""

    def __init__(
        self,
        results: Results,
        *,
        check_every_s: float = RELOAD_CHECK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._res = results
        self._check_every_s = check_every_s
        self._clock = clock
        self._checked = clock()
        self._stat = self._stat_now()
        self._lock = threading.Lock()

    def _stat_now(self) -> tuple[int, int, int] | None:
        try:
            st = (self._res.root / "leaderboard.json").stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def current(self) -> Results:
        """The generation to read now (a newer one when leaderboard.json changed)."""
        with self._lock:
            now = self._clock()
            if now - self._checked >= self._check_every_s:
                self._checked = now
                st = self._stat_now()
                if st is not None and st != self._stat:
                    self._reload(st)
            return self._res

    def reload(self) -> Results:
        """Read leaderboard.json again now, whatever its stat says."""
        with self._lock:
            self._reload(self._stat_now())
            return self._res

    def _reload(self, st: tuple[int, int, int] | None) -> None:
        old = self._res
        try:
            new = load_results(old.root, old.origin, old.reviews_dir)
        except SpaceDataError as e:
            log.warning("kept the results in hand: %s", e)
            return
        self._stat = st
        if new.generation != old.generation:
            log.info("results reloaded: leaderboard.json changed in %s", old.root)
            self._res = new

    def call(self, reader: Callable[[Results], T]) -> T:
        """``reader(current generation)``; on a part file of another generation, reload and
        retry once; a second mix raises MixedGeneration (its message says what to do)."""
        try:
            return reader(self.current())
        except MixedGeneration:
            time.sleep(RETRY_WAIT_S)
            return reader(self.reload())


_VERDICT_KEYS = ("act", "binary", "risk", "status", "reason", "fail", "harm", "src", "cite")


@dataclass(frozen=True)
class JudgeVerdicts:
    """One predictions file: the last decision line per id (raw outputs read on demand)."""

    path: Path
    """The predictions file."""
    rows: Mapping[str, Mapping[str, Any]]
    """id -> the verdict fields of its last decision line (no raw output)."""
    offsets: Mapping[str, int]
    """id -> byte offset of that line, to read its raw output when asked."""

    @classmethod
    def read(cls, path: Path) -> JudgeVerdicts:
        """Scan the file once; a torn final line is skipped."""
        rows: dict[str, Mapping[str, Any]] = {}
        offsets: dict[str, int] = {}
        if not path.is_file():
            raise SpaceDataError(
                f"predictions file {path} is missing: the results folder is incomplete; "
                "copy leaderboards/predictions/ with it"
            )
        try:
            for start, d in _lines_at(path):
                if isinstance(d, dict) and d.get("type") == "decision":
                    jid = str(d["id"])
                    rows[jid] = {k: d.get(k) for k in _VERDICT_KEYS}
                    offsets[jid] = start
        except OSError as e:
            raise io_error(path, e) from None
        return cls(path=path, rows=rows, offsets=offsets)

    def raw(self, did: str) -> str:
        """The judge's raw output for one decision point ('' when none)."""
        if did not in self.offsets:
            return ""
        d = _line_at(self.path, self.offsets[did])
        return str(d.get("raw") or d.get("error") or "")


# --------------------------------------------------------------------------- texts


@dataclass(frozen=True)
class Texts:
    """Where Browse finds the decision points' text, and which sources it may show."""

    origin: str
    """Markdown: where the text comes from, or why there is none and how to get it."""
    path: Path | None
    """The decision_points.jsonl read, or None when no text is available."""
    version: str | None
    """Dataset version of that file."""
    offsets: Mapping[str, int] = field(default_factory=dict)
    """Decision point id -> byte offset of its line (withheld sources left out)."""
    withheld: Mapping[str, str] = field(default_factory=dict)
    """Source -> why its text is not shown here."""
    card: str = ""
    """The built dataset's card (README.md), when present."""

    @classmethod
    def missing(cls, origin: str) -> Texts:
        """No text at all; ``origin`` says why and how to get it."""
        return cls(origin=origin, path=None, version=None)

    def point(self, did: str) -> dict[str, Any] | None:
        """One decision point's record (DecisionPoint.to_dict() + split, disputed), or None."""
        if self.path is None or did not in self.offsets:
            return None
        d = _line_at(self.path, self.offsets[did])
        try:  # in a checkout, hold the record to the schema the build wrote
            from bench.core.schema import DecisionPoint
        except ImportError:
            return d
        DecisionPoint.from_dict(d)
        return d


def _bench_build_dir() -> Path:
    """The build folder beside this Space's folder (not the one of whichever checkout the
    ``bench`` package was installed from)."""
    return DEFAULT_BUILD


def _raw_present(source: str) -> bool:
    """True when this machine holds the source's raw upstream data (a checkout with bench)."""
    try:
        from bench.core.paths import data_root
        from bench.sources import get

        folder = data_root() / get(source).folder
    except Exception:  # noqa: BLE001 - no bench, no data root, unknown source: not present
        return False
    return folder.is_dir() and any(folder.iterdir())


def _local_version(build_dir: Path, want: str | None) -> str | None:
    """The leaderboard's version when built here, else the newest build, else None."""
    if want and (build_dir / want / POINTS_FILE).is_file():
        return want
    try:
        from bench.dataset.reader import latest_version

        return latest_version(build_dir)
    except ImportError:
        latest = build_dir / "LATEST"
        return latest.read_text(encoding="utf-8").strip() if latest.is_file() else None
    except Exception:  # noqa: BLE001 - bench says nothing is built
        return None


NO_TEXT = (
    "No decision-point text is available here. Ids, gold labels and every judge's verdict are "
    "shown; the text itself (policy, visible turns, proposed action) is never committed to the "
    "repository. To see it locally, build the dataset: `python bench/build.py` (the embedded "
    "sample builds offline; R-Judge, StepShield and ASSEBench need their raw data, see "
    "docs/sources.md). On the Hub, set `FORESIGHT_DATASET_REPO` to the dataset that "
    "`bench/build.py --push-to-hub` published."
)


def _withheld_reason(free: bool, hub: bool, source: str) -> str | None:
    """Why a source's text may not be shown here, or None when it may."""
    if free:
        return None
    if hub:
        return (
            "its licence does not allow redistribution (or the manifest does not "
            "say it does), so the Hub copy of the Space never shows its text"
        )
    if not _raw_present(source):
        return (
            "its licence does not allow redistribution: its text is shown only on a "
            "machine that holds its raw data (set FORESIGHT_DATA)"
        )
    return None


def load_texts(
    build_dir: Path | None = None,
    *,
    version: str | None = None,
    dataset_repo: str | None = None,
) -> Texts:
    """Find the text for Browse: the Hub dataset named by ``dataset_repo`` or
    $FORESIGHT_DATASET_REPO; else (not on the Hub) the local build of ``version`` (the
    leaderboard's) or the newest one. Sources that may not be redistributed are withheld on the
    Hub, and locally unless their raw data is on this machine."""
    repo = (dataset_repo or os.environ.get(DATASET_ENV, "")).strip()
    hub = bool(repo) or on_hub()
    if repo:
        try:
            folder = _snapshot(repo, [POINTS_FILE, "manifest.json", "README.md"])
        except Exception as e:  # noqa: BLE001 - a missing text is not fatal to the page
            log.warning("cannot download %s: %s", repo, e)
            return Texts.missing(f"The dataset `{repo}` could not be downloaded ({e}). " + NO_TEXT)
        where = f"Hub dataset `{repo}`"
    elif on_hub():
        return Texts.missing(NO_TEXT)
    else:
        root = Path(build_dir) if build_dir else _bench_build_dir()
        v = _local_version(root, version)
        if v is None or not (root / v / POINTS_FILE).is_file():
            return Texts.missing(f"No build under `{root}`. " + NO_TEXT)
        folder = root / v
        where = f"local build `{short_path(folder)}`"
    path = folder / POINTS_FILE
    if not path.is_file():
        return Texts.missing(f"{where} has no {POINTS_FILE}. " + NO_TEXT)
    manifest_path = folder / "manifest.json"
    manifest = (
        json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    )
    configs: Mapping[str, Any] = manifest.get("configs", {})
    withheld: dict[str, str] = {}
    offsets: dict[str, int] = {}
    seen: set[str] = set()
    for start, d in _lines_at(path):
        src = str(d.get("source", ""))
        if src not in seen:
            seen.add(src)
            free = bool(configs.get(src, {}).get("redistributable", False))
            why = _withheld_reason(free, hub, src)
            if why:
                withheld[src] = why
        if src not in withheld:
            offsets[str(d["id"])] = start
    card_path = folder / "README.md"
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else ""
    v = str(manifest.get("version") or folder.name)
    origin = f"Text from the {where} (dataset version `{v}`)."
    if version and v != version:
        origin += (
            f" **The leaderboard is for version `{version}`**: texts may not match its ids; "
            "rebuild that version or publish it."
        )
    for src, why in sorted(withheld.items()):
        origin += f" {md_escape(src)}: {why}."
    return Texts(origin=origin, path=path, version=v, offsets=offsets, withheld=withheld, card=card)
