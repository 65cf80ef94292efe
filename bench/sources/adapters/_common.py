"""Helpers shared by the raw-source adapters: pins, field checks and action-string parsing.

Field checks raise ``RecordError`` with a reason a reader can act on; adapters turn it into a
``Reject`` so that a malformed record never crashes extraction and is never dropped silently.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from bench.core.errors import ConfigError, RecordError
from bench.core.paths import PINS_DIR
from bench.core.schema import Action
from bench.sources.base import Upstream, UpstreamFile


def load_pins(name: str) -> Upstream:
    """The pinned upstream of source ``name`` from ``bench/sources/pins/<name>.json``
    (``bench.core.paths.PINS_DIR``)."""
    p = PINS_DIR / f"{name}.json"
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
        return Upstream(
            repo=d["repo"],
            commit=d["commit"],
            raw_url=d["raw_url"],
            files=tuple(UpstreamFile(path=f["path"], sha256=f.get("sha256")) for f in d["files"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(
            f"pin file {p} is missing or invalid ({e}); restore it from git "
            "(`git checkout -- bench/sources/pins`)"
        ) from e


# ---------------------------------------------------------------------------- field checks


def field(
    rec: Mapping[str, Any], key: str, types: type | tuple[type, ...], *, null: bool = False
) -> Any:
    """``rec[key]`` checked against ``types`` (None allowed when ``null``); RecordError otherwise."""
    if not isinstance(rec, Mapping):
        raise RecordError(f"expected a JSON object, got {type(rec).__name__}")
    if key not in rec:
        raise RecordError(f"missing field {key!r}")
    v = rec[key]
    if v is None and null:
        return None
    # bool is an int subclass: a label of `true` is a type error, not 1
    if isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise RecordError(f"field {key!r} has type bool, expected {_names(types)}")
    if not isinstance(v, types):
        raise RecordError(f"field {key!r} has type {type(v).__name__}, expected {_names(types)}")
    return v


def str_list(rec: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list-of-strings field as a tuple."""
    v = field(rec, key, list)
    if not all(isinstance(x, str) for x in v):
        raise RecordError(f"field {key!r} must be a list of strings")
    return tuple(v)


def upstream_label(rec: Mapping[str, Any], key: str = "label") -> str:
    """An upstream record's 0/1 trajectory label as ``safe``/``unsafe``."""
    v = field(rec, key, int)
    if v not in (0, 1):
        raise RecordError(f"field {key!r} is {v!r}, expected 0 (safe) or 1 (unsafe)")
    return "unsafe" if v == 1 else "safe"


def _names(types: type | tuple[type, ...]) -> str:
    ts = types if isinstance(types, tuple) else (types,)
    return " or ".join(t.__name__ for t in ts)


# ---------------------------------------------------------------------------- actions

_NOT_TOOLS = frozenset({"Output", "Answer", "Final", "Thought", "Observation", "Action"})
"""Words that look like a tool name before ``: {`` but are labels of free text."""

_DICT_CALL = re.compile(
    r"^\s*(?P<tool>[A-Za-z_][A-Za-z0-9_]*)\s*(?::[ \t]*\n?\s*|\n\s*Action Input:\s*)?(?P<args>\{.*\})\s*$",
    re.S,
)
"""``Tool{'k': 'v'}``, ``Tool: {"k": "v"}`` and ``Tool\\nAction Input: {...}``."""

_PAREN_CALL = re.compile(r"^\s*(?P<tool>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>.*)\)\s*$", re.S)
"""``tool()`` and ``Tool(k='v')``."""

_COMMAND = re.compile(r'^\s*"command"\s*:\s*\{', re.S)
"""AutoGPT-style ``"command": {"name": ..., "args": {...}}`` (often with stray closing braces)."""


def parse_action(text: str) -> Action:
    """An upstream action string as an Action: the text is kept verbatim; ``tool`` and
    ``arguments`` are filled when the string is recognisably one tool call (arguments stay None
    when they cannot be parsed as a mapping). ``Final Answer: ...`` and plain replies are text
    actions."""
    m = _DICT_CALL.match(text)
    if m and m.group("tool") not in _NOT_TOOLS:
        return Action(text=text, tool=m.group("tool"), arguments=_mapping(m.group("args")))
    if _COMMAND.match(text):
        cmd = _command(text)
        if cmd is not None:
            return cmd
    m = _PAREN_CALL.match(text)
    if m and m.group("tool") not in _NOT_TOOLS and "\n" not in m.group("tool"):
        return Action(text=text, tool=m.group("tool"), arguments=_kwargs(m.group("args")))
    return Action(text=text)


def _mapping(s: str) -> dict[str, Any] | None:
    """A dict from JSON (control characters allowed inside strings) or a Python literal."""
    for load in (lambda x: json.loads(x, strict=False), ast.literal_eval):
        try:
            v = load(s)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(v, dict):
            return {str(k): v for k, v in v.items()}
    return None


def _command(text: str) -> Action | None:
    body = "{" + text.strip()
    for _ in range(4):  # the upstream strings carry up to a few unbalanced closing braces
        v = _mapping(body)
        if v is not None:
            cmd = v.get("command")
            if isinstance(cmd, dict) and isinstance(cmd.get("name"), str):
                args = cmd.get("args")
                return Action(
                    text=text, tool=cmd["name"], arguments=args if isinstance(args, dict) else None
                )
            return None
        if not body.endswith("}"):
            return None
        body = body[:-1].rstrip()
    return None


def _kwargs(s: str) -> dict[str, Any] | None:
    """``k=v, ...`` with literal values as a dict; ``{}`` for an empty call; else None."""
    if not s.strip():
        return {}
    try:
        call = ast.parse(f"f({s})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(call, ast.Call) or call.args:
        return None
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            return None
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError, RecursionError):
            return None
    return out


def readable_call(tool: str, arguments: Mapping[str, Any]) -> str:
    """``tool(k="v", n=3)``: one readable line-ish form of a structured call (values as JSON)."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return f"{tool}({args})"
