"""judges.toml: the plug-in surface. Each ``[[judge]]`` row is validated into a frozen JudgeSpec.

Validation names the judge and the line of the offending key in the file for every error: unknown
keys (with a "did you mean"), wrong types, duplicate ids, an unknown backend, prompt or parser,
and ``params`` keys or types the backend does not declare. ``tomllib`` reports no line numbers for
values, so lines are found by scanning the TOML text (``_locate``). Loading imports each named
backend's *module* (to read its declared params) but never its SDK.
"""

from __future__ import annotations

import difflib
import logging
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.core.errors import ConfigError
from bench.core.paths import JUDGES_TOML
from bench.core.secrets import check_env_name, looks_like_secret
from bench.judging import backends
from bench.judging.protocol import MAX_BATCH_SIZE, MAX_CONCURRENCY, JudgeSpec, toml_types
from bench.prompts import scoring
from bench.prompts.parsers import PARSERS
from bench.prompts.renderer import TEMPLATES

log = logging.getLogger(__name__)

DEFAULT_PATH = JUDGES_TOML
"""The shipped judges file."""

ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
"""A judge id, matched whole (``fullmatch``: a trailing newline is not part of a slug): a
lower-case slug; it names a folder under leaderboards/predictions/."""


_INTERNAL = ("line", "generative")
"""JudgeSpec fields the loader fills itself; a row may not set them."""

_FIELDS: dict[str, tuple[type, ...]] = toml_types(JudgeSpec, skip=_INTERNAL)
"""Key of a ``[[judge]]`` row -> the TOML types it accepts, read from the JudgeSpec dataclass."""

ROLES = ("judge", "probe")
"""What a row is: a ranked judge, or a shortcut probe (a reference line, never ranked)."""
_TOP_LEVEL = {"judge"}


def _hint(key: str, known: Any) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    # bool is an int in Python; a TOML `true` is never a valid count or price
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def _type_name(types: tuple[type, ...]) -> str:
    if float in types:  # an integer is a number too: say it once
        types = tuple(t for t in types if t is not int)
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true or false",
        dict: "a table",
        list: "an array",
    }
    return " or ".join(names.get(t, t.__name__) for t in types)


@dataclass(frozen=True)
class _Lines:
    """Where each row and key sits in the TOML text."""

    rows: tuple[int, ...]
    """Line of each ``[[judge]]`` header, in order."""
    keys: tuple[Mapping[str, int], ...]
    """Per row: top-level key -> line."""
    params: tuple[Mapping[str, int], ...]
    """Per row: params key -> line."""


_HEADER = re.compile(r"^\s*\[\[\s*judge\s*\]\]")
_PARAMS_HEADER = re.compile(r"^\s*\[\s*judge\s*\.\s*params\s*\]")
_OTHER_HEADER = re.compile(r"^\s*\[")
_KEY = re.compile(r"""^\s*("?)([A-Za-z0-9_.-]+)\1\s*=""")
_INLINE_KEY = re.compile(r"""[{,]\s*"?([A-Za-z0-9_-]+)"?\s*=""")


def _locate(text: str) -> _Lines:
    """Scan the TOML text for row headers and key lines (multi-line strings skipped)."""
    rows: list[int] = []
    keys: list[dict[str, int]] = []
    params: list[dict[str, int]] = []
    in_params = False
    in_multiline: str | None = None
    for no, line in enumerate(text.splitlines(), 1):
        if in_multiline:
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        if _HEADER.match(line):
            rows.append(no)
            keys.append({})
            params.append({})
            in_params = False
            continue
        if _PARAMS_HEADER.match(line):
            in_params = True
            continue
        if _OTHER_HEADER.match(line):
            in_params = False
            continue
        m = _KEY.match(line)
        if m and rows:
            key = m.group(2)
            if in_params:
                params[-1].setdefault(key, no)
            else:
                keys[-1].setdefault(key, no)
                if key.startswith("params."):
                    params[-1].setdefault(key.split(".", 1)[1], no)
                if key == "params" and "{" in line:
                    for k in _INLINE_KEY.findall(line[line.index("{") :]):
                        params[-1].setdefault(k, no)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_multiline = quote
                break
    return _Lines(tuple(rows), tuple(keys), tuple(params))


def parse(text: str, path: str | Path = "judges.toml") -> list[JudgeSpec]:
    """Validate judges.toml text into JudgeSpecs; raises ConfigError listing every problem, each
    naming the file, line and judge."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e}); fix the syntax") from e
    lines = _locate(text)
    errors: list[str] = []
    for key in data:
        if key not in _TOP_LEVEL:
            errors.append(
                f"{path}: unknown top-level key {key!r}{_hint(key, _TOP_LEVEL)} "
                "(each judge is a [[judge]] table)"
            )
    rows = data.get("judge", [])
    if not isinstance(rows, list):
        errors.append(f"{path}: 'judge' must be an array of tables, written [[judge]]")
        rows = []
    specs: list[JudgeSpec] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        row_line = lines.rows[i] if i < len(lines.rows) else 0
        key_lines = lines.keys[i] if i < len(lines.keys) else {}
        param_lines = lines.params[i] if i < len(lines.params) else {}
        if not isinstance(row, dict):
            errors.append(f"{path}:{row_line}: a [[judge]] entry must be a table")
            continue
        spec, errs = _validate_row(row, row_line, key_lines, param_lines, path)
        errors.extend(errs)
        if spec is None:
            continue
        if spec.id in seen:
            errors.append(
                f"{path}:{key_lines.get('id', row_line)}: duplicate judge id {spec.id!r} "
                f"(first defined at line {seen[spec.id]}); give each row its own id"
            )
            continue
        seen[spec.id] = key_lines.get("id", row_line)
        specs.append(spec)
    if errors:
        raise ConfigError("\n".join(errors))
    if not specs:
        raise ConfigError(
            f"{path}: no [[judge]] rows: add one (docs/judges.md has the keys), or pass --judges "
            "PATH to a file that has some"
        )
    return specs


class _RowErrors:
    """Collects the problems of one row, each with its file line and the judge's name."""

    def __init__(self, path: str | Path, row: Mapping[str, Any], row_line: int, lines: Mapping[str, int], params: Mapping[str, int]) -> None:  # fmt: skip
        self.path, self.row_line, self.lines, self.param_lines = path, row_line, lines, params
        jid = row.get("id")
        self.who = f"judge {jid!r}" if isinstance(jid, str) else f"the judge at line {row_line}"
        self.errors: list[str] = []

    def add(self, key: str | None, msg: str, line: int | None = None) -> None:
        at = line if line is not None else self.lines.get(key or "", self.row_line)
        self.errors.append(f"{self.path}:{at}: {msg} in {self.who}")

    def param_line(self, key: str) -> int:
        return self.param_lines.get(key, self.lines.get("params", self.row_line))


def _check_top_level(row: Mapping[str, Any], e: _RowErrors) -> None:
    for key, value in row.items():
        if key not in _FIELDS:
            e.add(key, f"unknown key {key!r}{_hint(key, _FIELDS)}")
            continue
        types = _FIELDS[key]
        if not _type_ok(value, types):
            shown = value if key not in ("params",) else type(value).__name__
            e.add(key, f"{key!r} must be {_type_name(types)}, not {type(value).__name__} {shown!r}")
    for required in ("id", "backend"):
        if required not in row:
            e.add(None, f"missing required key {required!r}")
    jid = row.get("id")
    if isinstance(jid, str) and not ID_RE.fullmatch(jid):
        e.add("id", f"id {jid!r} must be a lower-case slug (a-z, 0-9, '.', '_', '-', 1-64 long)")
    for key, top in (("concurrency", MAX_CONCURRENCY), ("batch_size", MAX_BATCH_SIZE)):
        v = row.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and not 1 <= v <= top:
            e.add(key, f"{key!r} must be between 1 and {top:,}, not {v:,}")
    for key in ("usd_per_m_input", "usd_per_m_output"):
        v = row.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v < 0:
            e.add(key, f"{key!r} must not be negative")
    role = row.get("role", "judge")
    if isinstance(role, str) and role not in ROLES:
        e.add("role", f"role {role!r} must be one of {', '.join(ROLES)}")


def _check_scoring(row: Mapping[str, Any], info: backends.BackendInfo, e: _RowErrors) -> None:
    """``scoring`` is a mode the backend supports, and logprobs needs a parser with a table."""
    mode = row.get("scoring", "generate")
    if not isinstance(mode, str):
        return
    if mode not in scoring.MODES:
        e.add("scoring", f"scoring {mode!r} must be one of {', '.join(scoring.MODES)}")
    elif mode not in info.scorings:
        e.add(
            "scoring",
            f"backend {info.name!r} cannot score by {mode} (it supports: "
            f"{', '.join(info.scorings)})",
        )
    elif (
        mode == "logprobs"
        and isinstance(row.get("parser"), str)
        and row["parser"] not in scoring.SCORINGS
    ):
        e.add(
            "scoring",
            f"parser {row['parser']!r} has no verdict words to score; use one of "
            f"{', '.join(scoring.SCORINGS)}",
        )


def _check_params(
    row: Mapping[str, Any], info: backends.BackendInfo, e: _RowErrors
) -> Mapping[str, Any]:
    params = row.get("params", {})
    if not isinstance(params, Mapping):
        return {}
    ok = True
    for pkey, pval in params.items():
        line = e.param_line(pkey)
        if pkey not in info.params:
            known = ", ".join(sorted(info.params)) or "none"
            e.add(
                None,
                f"unknown params key {pkey!r}{_hint(pkey, info.params)} for backend "
                f"{info.name!r} (it accepts: {known})",
                line,
            )
            ok = False
            continue
        ptypes = info.params[pkey]
        ptypes = ptypes if isinstance(ptypes, tuple) else (ptypes,)
        if float in ptypes and int not in ptypes:
            ptypes = (*ptypes, int)  # TOML `1` for a float option is fine
        if not _type_ok(pval, ptypes):
            shown = (
                "a value that looks like a key"
                if isinstance(pval, str) and looks_like_secret(pval)
                else repr(pval)
            )
            e.add(None, f"params key {pkey!r} must be {_type_name(ptypes)}, not {shown}", line)
            ok = False
            continue
        if pkey.endswith("_env") and isinstance(pval, str):
            try:
                check_env_name(str(row.get("id")), pkey, pval)
            except ConfigError as err:
                e.add(None, str(err), line)
                ok = False
    if ok and info.check is not None:
        try:
            info.check(str(row.get("id")), params)
        except ConfigError as err:
            e.add(None, str(err), e.lines.get("params", e.row_line))
    return params


def _check_prompt_parser(row: Mapping[str, Any], info: backends.BackendInfo, e: _RowErrors) -> None:
    prompt, parser = row.get("prompt", ""), row.get("parser", "")
    if info.generative:
        if not prompt:
            e.add(None, f"backend {info.name!r} generates text: set 'prompt' (a renderer template)")
        if not parser:
            e.add(None, f"backend {info.name!r} generates text: set 'parser' (a verdict parser)")
    elif parser:
        e.add("parser", f"backend {info.name!r} returns verdicts directly: remove 'parser'")
    if isinstance(prompt, str) and prompt and prompt not in TEMPLATES:
        e.add(
            "prompt",
            f"unknown prompt {prompt!r}{_hint(prompt, TEMPLATES)} "
            f"(known: {', '.join(sorted(TEMPLATES))})",
        )
    if isinstance(parser, str) and parser and parser not in PARSERS:
        e.add(
            "parser",
            f"unknown parser {parser!r}{_hint(parser, PARSERS)} "
            f"(known: {', '.join(sorted(PARSERS))})",
        )


def _validate_row(
    row: Mapping[str, Any],
    row_line: int,
    key_lines: Mapping[str, int],
    param_lines: Mapping[str, int],
    path: str | Path,
) -> tuple[JudgeSpec | None, list[str]]:
    """Every problem of one row at once (top-level keys, backend, params and the backend's own
    value checks, prompt and parser), or its JudgeSpec."""
    e = _RowErrors(path, row, row_line, key_lines, param_lines)
    _check_top_level(row, e)
    info = None
    if isinstance(row.get("backend"), str):
        try:
            info = backends.get(row["backend"])
        except ConfigError as err:
            e.add("backend", str(err))
    if info is not None:
        params = _check_params(row, info, e)
        _check_prompt_parser(row, info, e)
        _check_scoring(row, info, e)
        if info.fits_on_dev and row.get("fitted_on_dev") is False:
            e.add(
                "fitted_on_dev",
                f"backend {info.name!r} is fitted on the dev split: fitted_on_dev cannot be false",
            )
    if e.errors or info is None:
        return None, e.errors
    fields = {k: v for k, v in row.items() if k != "params"}
    for key in ("usd_per_m_input", "usd_per_m_output"):
        if key in fields:
            fields[key] = float(fields[key])
    fields["fitted_on_dev"] = bool(fields.get("fitted_on_dev", False)) or info.fits_on_dev
    spec = JudgeSpec(**fields, params=dict(params), line=row_line, generative=info.generative)
    return spec, []


def load(path: str | Path | None = None) -> list[JudgeSpec]:
    """Read and validate a judges file (default: the shipped ``judges.toml``)."""
    p = Path(path) if path else DEFAULT_PATH
    if not p.is_file():
        raise ConfigError(f"{p}: no such judges file; pass --judges PATH")
    data = p.read_bytes()
    if b"\x00" in data:
        raise ConfigError(f"{p}: a binary file, not a TOML judges file; pass --judges PATH")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ConfigError(
            f"{p}:{line}: not UTF-8 text (byte {e.start}); save judges.toml as UTF-8"
        ) from e
    return parse(text, p)


def select(specs: list[JudgeSpec], ids: list[str] | None) -> list[JudgeSpec]:
    """The specs named by ``ids`` (all when None); an unknown id raises with close matches."""
    if not ids:
        return list(specs)
    by_id = {s.id: s for s in specs}
    out = []
    for jid in ids:
        if jid not in by_id:
            raise ConfigError(
                f"no judge {jid!r} in judges.toml{_hint(jid, by_id)} (known: {', '.join(by_id)})"
            )
        out.append(by_id[jid])
    return out


class ModelRow(Protocol):
    """What ``unpinned`` reads of a judge: a JudgeSpec, or the report's JudgeInfo."""

    @property
    def backend(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def revision(self) -> str: ...


def unpinned(row: ModelRow, loaded: Sequence[Mapping[str, Any]] = ()) -> bool:
    """True for a row that loads hub weights without a pinned ``revision``: its results may
    come from weights that change under the same name. A local folder or an installed package
    (``package:``) is what it is; an API model cannot be pinned from here; a run whose loaded
    weights (``loaded``: the predictions' run records) carry a commit or a digest is pinned by
    what it recorded. The one definition: ``decide.py --check`` warns with it and the
    leaderboard marks rows with it."""
    info = backends.find(row.backend)
    if info is None or not info.loads_weights or row.revision or not row.model:
        return False
    if row.model.startswith("package:") or Path(row.model).exists():
        return False
    return not any(w.get("commit") or w.get("sha256") for w in loaded)
