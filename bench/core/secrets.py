"""Secrets: how a key is told from a name, and how values are kept out of everything written.

judges.toml is committed, so it may only NAME environment variables (``api_key_env``); a value
that looks like a key there, in ``extra_body`` or in a header is refused at ``--check`` without
repeating it. At run time, ``Redactor`` replaces the value of every variable a row names (and
``HF_TOKEN``) in every text a run writes or prints: raw outputs, errors, run lines, the summary.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from bench.core.errors import ConfigError

ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
"""What an environment-variable name looks like (``api_key_env`` and other ``*_env`` params)."""

KEY_PREFIXES = (
    "sk-",
    "sk_",
    "hf_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xox",
    "AIza",
    "AKIA",
    "gsk_",
)
"""Prefixes of common API keys and tokens (case-sensitive: ``HF_TOKEN`` is a name, ``hf_...`` a
token)."""


def looks_like_secret(value: str) -> bool:
    """True when ``value`` looks like a key or token rather than a name or a setting: a known
    key prefix (``sk-``, ``hf_``, ``ghp_``...), a ``Bearer``/``Basic`` credential, or a run of 24
    or more letters and digits in mixed case (base62 keys; lower-case hex digests and upper-case
    variable names are not keys)."""
    v = value.strip()
    if v.startswith(KEY_PREFIXES) or v.lower().startswith(("bearer ", "basic ", "token ")):
        return True
    for run in re.findall(r"[A-Za-z0-9]{24,}", v):
        if re.search(r"\d", run) and re.search(r"[a-z]", run) and re.search(r"[A-Z]", run):
            return True
    return False


def check_env_name(judge_id: str, key: str, value: str) -> None:
    """``params.<key>`` must name an environment variable, never hold the secret itself; the
    message never repeats the value."""
    if looks_like_secret(value) or not ENV_NAME.fullmatch(value) or len(value) > 64:
        raise ConfigError(
            f"judge {judge_id!r}: params.{key} must be the NAME of an environment variable (like "
            "OPENAI_API_KEY or HF_TOKEN), and what is there looks like a key or is not such a "
            "name: put the key in the environment (export OPENAI_API_KEY=...) and write only the "
            "variable's name in judges.toml, which is committed"
        )


MIN_SECRET_CHARS = 6
"""Shorter values are not redacted (replacing a one-letter value would garble every text)."""


class Redactor:
    """Replaces known secret values with ``[REDACTED:<VARIABLE>]`` in text and nested rows."""

    def __init__(self, variables: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        pairs = {(env[v], v) for v in set(variables) if env.get(v)}
        # longest first, so a secret containing another is replaced whole
        self.pairs = sorted(
            ((val, name) for val, name in pairs if len(val) >= MIN_SECRET_CHARS),
            key=lambda p: -len(p[0]),
        )

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def text(self, s: str) -> str:
        """``s`` with every secret value replaced."""
        for val, name in self.pairs:
            if val in s:
                s = s.replace(val, f"[REDACTED:{name}]")
        return s

    def row(self, obj: Any) -> Any:
        """A JSON-able value with every string redacted."""
        if not self.pairs:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            return {k: self.row(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.row(v) for v in obj]
        return obj


def named_variables(params: Mapping[str, Any]) -> list[str]:
    """The environment variables a row's params name (every ``*_env`` value), plus HF_TOKEN."""
    names = [str(v) for k, v in params.items() if k.endswith("_env") and isinstance(v, str)]
    return sorted({*names, "HF_TOKEN"})


def secret_values(value: Any, where: str = "") -> list[str]:
    """Paths (``a.b[2]``) of the string values inside ``value`` that look like secrets."""
    out: list[str] = []
    if isinstance(value, str):
        if looks_like_secret(value):
            out.append(where or "value")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            out += secret_values(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            out += secret_values(v, f"{where}[{i}]")
    return out
