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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError
from bench.core.paths import JUDGES_TOML
from bench.judging import backends
from bench.judging.protocol import JudgeSpec
from bench.prompts.parsers import PARSERS
from bench.prompts.renderer import TEMPLATES

log = logging.getLogger(__name__)

DEFAULT_PATH = JUDGES_TOML
"""The shipped judges file."""

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
"""A judge id: a lower-case slug (it names a folder under leaderboards/predictions/)."""


# key -> (accepted types, human name)
_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "id": ((str,), "a string"),
    "display_name": ((str,), "a string"),
    "backend": ((str,), "a string"),
    "model": ((str,), "a string"),
    "revision": ((str,), "a string"),
    "subfolder": ((str,), "a string"),
    "prompt": ((str,), "a string"),
    "parser": ((str,), "a string"),
    "params": ((dict,), "a table"),
    "concurrency": ((int,), "an integer"),
    "batch_size": ((int,), "an integer"),
    "usd_per_m_input": ((int, float), "a number"),
    "usd_per_m_output": ((int, float), "a number"),
    "open_weights": ((bool,), "true or false"),
    "license": ((str,), "a string"),
    "submitted_by": ((str,), "a string"),
    "notes": ((str,), "a string"),
}
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
    templates = set(TEMPLATES)
    parsers = set(PARSERS)
    specs: list[JudgeSpec] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        row_line = lines.rows[i] if i < len(lines.rows) else 0
        key_lines = lines.keys[i] if i < len(lines.keys) else {}
        param_lines = lines.params[i] if i < len(lines.params) else {}
        spec, errs = _validate_row(row, row_line, key_lines, param_lines, templates, parsers, path)
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
    return specs


def _validate_row(
    row: Mapping[str, Any],
    row_line: int,
    key_lines: Mapping[str, int],
    param_lines: Mapping[str, int],
    templates: set[str] | None,
    parsers: set[str] | None,
    path: str | Path,
) -> tuple[JudgeSpec | None, list[str]]:
    errors: list[str] = []
    jid = row.get("id")
    who = f"judge {jid!r}" if isinstance(jid, str) else f"the judge at line {row_line}"

    def err(key: str | None, msg: str, line: int | None = None) -> None:
        at = line if line is not None else key_lines.get(key or "", row_line)
        errors.append(f"{path}:{at}: {msg} in {who}")

    for key, value in row.items():
        if key not in _FIELDS:
            err(key, f"unknown key {key!r}{_hint(key, _FIELDS)}")
            continue
        types, tname = _FIELDS[key]
        if not _type_ok(value, types):
            err(key, f"{key!r} must be {tname}, not {type(value).__name__} {value!r}")
    for required in ("id", "backend"):
        if required not in row:
            err(None, f"missing required key {required!r}")
    if errors:
        return None, errors
    if not ID_RE.match(row["id"]):
        err("id", f"id {row['id']!r} must be a lower-case slug (a-z, 0-9, '.', '_', '-')")
    for key in ("concurrency", "batch_size"):
        if key in row and row[key] < 1:
            err(key, f"{key!r} must be at least 1, not {row[key]}")
    for key in ("usd_per_m_input", "usd_per_m_output"):
        if key in row and row[key] < 0:
            err(key, f"{key!r} must not be negative")
    try:
        info = backends.get(row["backend"])
    except ConfigError as e:
        err("backend", str(e))
        return None, errors
    params = row.get("params", {})
    for pkey, pval in params.items():
        pline = param_lines.get(pkey, key_lines.get("params", row_line))
        if pkey not in info.params:
            known = ", ".join(sorted(info.params)) or "none"
            err(
                None,
                f"unknown params key {pkey!r}{_hint(pkey, info.params)} for backend "
                f"{info.name!r} (it accepts: {known})",
                pline,
            )
            continue
        ptypes = info.params[pkey]
        ptypes = ptypes if isinstance(ptypes, tuple) else (ptypes,)
        if float in ptypes and int not in ptypes:
            ptypes = (*ptypes, int)  # TOML `1` for a float option is fine
        if not _type_ok(pval, ptypes):
            err(None, f"params key {pkey!r} must be {_type_name(ptypes)}, not {pval!r}", pline)
    prompt, parser = row.get("prompt", ""), row.get("parser", "")
    if info.generative:
        if not prompt:
            err(None, f"backend {info.name!r} generates text: set 'prompt' (a renderer template)")
        if not parser:
            err(None, f"backend {info.name!r} generates text: set 'parser' (a verdict parser)")
    elif parser:
        err("parser", f"backend {info.name!r} returns verdicts directly: remove 'parser'")
    if prompt and templates is not None and prompt not in templates:
        err(
            "prompt",
            f"unknown prompt {prompt!r}{_hint(prompt, templates)} "
            f"(known: {', '.join(sorted(templates))})",
        )
    if parser and parsers is not None and parser not in parsers:
        err(
            "parser",
            f"unknown parser {parser!r}{_hint(parser, parsers)} "
            f"(known: {', '.join(sorted(parsers))})",
        )
    if info.check is not None and not errors:
        try:
            info.check(str(row["id"]), params)
        except ConfigError as e:
            err(None, str(e), key_lines.get("params", row_line))
    if errors:
        return None, errors
    fields = {k: v for k, v in row.items() if k != "params"}
    for key in ("usd_per_m_input", "usd_per_m_output"):
        if key in fields:
            fields[key] = float(fields[key])
    spec = JudgeSpec(**fields, params=dict(params), line=row_line, generative=info.generative)
    return spec, errors


def load(path: str | Path | None = None) -> list[JudgeSpec]:
    """Read and validate a judges file (default: the shipped ``judges.toml``)."""
    p = Path(path) if path else DEFAULT_PATH
    if not p.is_file():
        raise ConfigError(f"{p}: no such judges file; pass --judges PATH")
    return parse(p.read_text(encoding="utf-8"), p)


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
