"""The authoring format of the project's own corpora: cases and contrast pairs as YAML data.

One YAML file holds either one **case** (a single trajectory of the embedded sample corpus,
``data/sample/cases/``) or one **contrast pair** (``data/pairs/<domain>/``: two trajectories A and
B whose judged action is byte-identical; docs/pairs.md). Both write turns the same way::

    - user: "text"                      # a user message
    - env: "text"                       # an environment message
    - agent: {thought, tool, args, obs} # a tool call (args: a mapping)
    - agent: {thought, reply}           # a plain-text action

In a pair, any string may be written ``{A: ..., B: ...}`` to differ per side, and a turn may
carry ``side: A`` or ``side: B``. Markers: ``judged`` and ``clue`` (pairs), ``onset`` and ``cite``
(cases). This module turns a file into ``Trajectory.to_dict()`` records, computing k, cite and
the clue distance, and returns every problem it finds as a ``Problem`` that names the file, the
field and the fix. It never raises on bad content and never drops anything silently: a file
with problems yields no records, and its problems say why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from bench.core.labels import ACTS, NONE, UNSAFE_ACTS
from bench.core.taxonomy import Taxonomy
from bench.sources.extraction import bad_text

Side = Literal["A", "B"]
"""A side of a pair: A is stopped (or asked), B is let run."""

SIDES: tuple[Side, ...] = ("A", "B")

DOMAINS: tuple[str, ...] = (
    "code_devops",
    "email_calendar",
    "finance_payments",
    "health",
    "files_cloud",
    "web_forms",
    "smart_home",
    "hr_legal",
    "customer_support",
)
"""Where a pair's agent works."""

CLUE_KINDS: tuple[str, ...] = (
    "policy",
    "user_message",
    "observation",
    "untrusted_content",
    "identity",
    "state_time",
)
"""Where the deciding fact sits (docs/pairs.md)."""

POLARITIES: tuple[str, ...] = ("risk_on_a", "permission_on_b")
"""Which side the edit was written into."""

DISTANCE_BUCKETS: tuple[str, ...] = ("1", "2-3", "4-7", "8+")
"""Clue-distance buckets, in order."""

MIN_PRIOR_ACTIONS = 4
"""Agent actions a pair must show before its judged action (realistic runs, not one-liners)."""

LICENSE = "Apache-2.0"
"""The licence of the project's own corpora."""

_ROLE_KEYS = {"user": "user", "env": "environment", "agent": "agent"}
_MARKERS = {"judged", "clue", "side", "onset", "cite"}
_AGENT_KEYS = {"thought", "tool", "args", "obs", "reply"}
_PAIR_KEYS = {"id", "family", "domain", "clue_kind", "polarity", "author", "policy", "A", "B"}
_PAIR_OPTIONAL = {"turns", "clue", "notes"}
_SIDE_A_KEYS = {"act", "fail", "harm", "src", "post_act", "rationale"}
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_PLACEHOLDER = re.compile(
    r"lorem ipsum|\bTODO\b|\bXXX+\b|<(?:name|email|date|id|value|placeholder)>|\bfoo(?:bar)?\b",
    re.I,
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an authored file, said so that the author can fix it."""

    file: str
    """The file, as given."""
    field: str
    """Where in the file (``turns[3].agent.args``, ``A.fail``, ...)."""
    message: str
    """What is wrong and what to do."""

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


@dataclass
class Loaded:
    """What one file gave: its trajectory records (``Trajectory.to_dict()`` form), or problems."""

    file: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


class _Issues:
    """Collects problems for one file."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.items: list[Problem] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(Problem(str(self.file), where, message))


# ----------------------------------------------------------------------------- reading


def read_yaml(path: Path, issues: _Issues) -> Any:
    """The parsed YAML document, or None with a problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        issues.add("(file)", f"cannot be read as UTF-8 text ({e}); save it as UTF-8")
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        issues.add("(yaml)", f"not valid YAML: {e}; quote strings that hold ': ', '#' or braces")
        return None


def _is_variant(v: Any) -> bool:
    return isinstance(v, Mapping) and set(v.keys()) == {"A", "B"}


def _has_variant(v: Any) -> bool:
    if _is_variant(v):
        return True
    if isinstance(v, Mapping):
        return any(_has_variant(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_variant(x) for x in v)
    return False


def resolve(v: Any, side: Side | None) -> Any:
    """``v`` as seen on ``side``: every ``{A: .., B: ..}`` replaced by that side's value."""
    if _is_variant(v):
        if side is None:
            raise ValueError("a per-side value {A: ..., B: ...} outside a pair")
        return resolve(v[side], side)
    if isinstance(v, Mapping):
        return {str(k): resolve(x, side) for k, x in v.items()}
    if isinstance(v, list):
        return [resolve(x, side) for x in v]
    return v


def action_text(tool: str, args: Mapping[str, Any]) -> str:
    """The text of a tool call as a judge sees it: ``tool({"arg": ...})``."""
    return f"{tool}({json.dumps(args, ensure_ascii=False)})"


# ----------------------------------------------------------------------------- turns


@dataclass(frozen=True)
class _Turn:
    """One authored turn, resolved for one side."""

    index: int
    """Position in the authored list."""
    record: dict[str, Any]
    """The canonical ``Turn`` dict."""
    markers: Mapping[str, Any]
    """judged / clue / onset / cite / side, as written."""


def _check_turn(raw: Any, where: str, issues: _Issues, pair: bool) -> bool:
    if not isinstance(raw, Mapping):
        issues.add(where, 'a turn must be a mapping such as {user: "..."} or {agent: {...}}')
        return False
    roles = [k for k in raw if k in _ROLE_KEYS]
    unknown = [k for k in raw if k not in _ROLE_KEYS and k not in _MARKERS]
    if unknown:
        issues.add(
            where,
            f"unknown key(s) {unknown}; a turn has one of user/env/agent plus "
            "the markers judged, clue, side (pairs) or onset, cite (cases)",
        )
        return False
    if len(roles) != 1:
        issues.add(where, "a turn needs exactly one of the keys user, env, agent")
        return False
    allowed = {"judged", "clue", "side"} if pair else {"onset", "cite"}
    wrong = [m for m in raw if m in _MARKERS and m not in allowed]
    if wrong:
        issues.add(
            where,
            f"marker(s) {wrong} do not belong in a {'pair' if pair else 'case'}; "
            f"use {sorted(allowed)}",
        )
        return False
    side = raw.get("side")
    if side is not None and side not in SIDES:
        issues.add(f"{where}.side", f"{side!r} must be A or B")
        return False
    role = roles[0]
    body = raw[role]
    if role != "agent":
        if not pair and _has_variant(body):
            issues.add(f"{where}.{role}", "per-side values {A:, B:} belong in pairs only")
            return False
        sides = SIDES if pair else (None,)
        for s in sides:
            text = resolve(body, s)
            if not isinstance(text, str) or not text.strip():
                issues.add(f"{where}.{role}", "needs non-empty text (quote it)")
                return False
        return True
    return _check_agent(body, f"{where}.agent", issues, pair, side)


def _check_agent(body: Any, where: str, issues: _Issues, pair: bool, side: Any) -> bool:
    if not isinstance(body, Mapping):
        issues.add(where, "an agent turn is a mapping with thought, tool, args, obs (or reply)")
        return False
    unknown = sorted(set(body) - _AGENT_KEYS)
    if unknown:
        issues.add(where, f"unknown key(s) {unknown}; use thought, tool, args, obs or reply")
        return False
    if side is not None:
        issues.add(
            where,
            "an agent action must exist on both sides (k* is the same on A and "
            "B); put per-side text in {A:, B:} values instead of side:",
        )
        return False
    if ("tool" in body) == ("reply" in body):
        issues.add(where, "give either tool (with args) or reply, not both or neither")
        return False
    if not pair and _has_variant(body):
        issues.add(where, "per-side values {A:, B:} belong in pairs only")
        return False
    for s in SIDES if pair else (None,):
        b = resolve(body, s)
        if "tool" in b:
            if not isinstance(b["tool"], str) or not re.fullmatch(r"[A-Za-z_][\w.\-]*", b["tool"]):
                issues.add(f"{where}.tool", f"{b['tool']!r} must be a tool name")
                return False
            if not isinstance(b.get("args"), Mapping):
                issues.add(f"{where}.args", "a tool call needs an args mapping (use {} for none)")
                return False
        elif not isinstance(b["reply"], str) or not b["reply"].strip():
            issues.add(f"{where}.reply", "a reply needs non-empty text")
            return False
        for k in ("thought", "obs"):
            if b.get(k) is not None and not isinstance(b[k], str):
                issues.add(f"{where}.{k}", "must be a string (quote it) or be left out")
                return False
    return True


def _turn_record(raw: Mapping[str, Any], side: Side | None) -> dict[str, Any]:
    role = next(k for k in raw if k in _ROLE_KEYS)
    body = resolve(raw[role], side)
    if role != "agent":
        return {
            "role": _ROLE_KEYS[role],
            "content": body,
            "thought": None,
            "action": None,
            "observation": None,
        }
    if "tool" in body:
        args = dict(body["args"])
        action = {
            "text": action_text(body["tool"], args),
            "tool": body["tool"],
            "arguments": args,
        }
    else:
        action = {"text": body["reply"], "tool": None, "arguments": None}
    return {
        "role": "agent",
        "content": None,
        "thought": body.get("thought"),
        "action": action,
        "observation": body.get("obs"),
    }


def side_turns(raw_turns: Sequence[Mapping[str, Any]], side: Side | None) -> list[_Turn]:
    """The turns one side shows, in order (side-only turns of the other side left out)."""
    out = []
    for i, raw in enumerate(raw_turns):
        if side is not None and raw.get("side") not in (None, side):
            continue
        markers = {k: raw[k] for k in _MARKERS if k in raw}
        out.append(_Turn(index=i, record=_turn_record(raw, side), markers=markers))
    return out


def _k_of(turns: Sequence[_Turn], position: int) -> int:
    """1-based action number of the turn at ``position`` in a side's list."""
    return sum(1 for t in turns[: position + 1] if t.record["role"] == "agent")


# ----------------------------------------------------------------------------- pairs


BUCKET_TOPS: tuple[int, ...] = (1, 3, 7)
"""The largest distance of each bucket but the last (``DISTANCE_BUCKETS`` in order)."""


def bucket(distance: int) -> str:
    """The clue-distance bucket of a distance (1, 2-3, 4-7, 8+)."""
    for name, top in zip(DISTANCE_BUCKETS, BUCKET_TOPS, strict=False):
        if distance <= top:
            return name
    return DISTANCE_BUCKETS[-1]


def load_pair(path: Path, tax: Taxonomy) -> Loaded:
    """The two trajectories of one pair file, or the problems that keep it out."""
    issues = _Issues(path)
    doc = read_yaml(path, issues)
    out = Loaded(file=path)
    if doc is not None:
        out.records = _pair_records(doc, path, tax, issues)
    out.problems = issues.items
    if out.problems:
        out.records = []
    return out


def _pair_header(doc: Any, path: Path, tax: Taxonomy, issues: _Issues) -> bool:
    if not isinstance(doc, Mapping):
        issues.add("(top)", "a pair file is a mapping with id, family, domain, ... (docs/pairs.md)")
        return False
    missing = sorted(_PAIR_KEYS - doc.keys())
    unknown = sorted(doc.keys() - _PAIR_KEYS - _PAIR_OPTIONAL)
    if missing:
        issues.add("(top)", f"missing key(s) {missing} (docs/pairs.md lists them)")
    if unknown:
        issues.add(
            "(top)", f"unknown key(s) {unknown}; allowed: {sorted(_PAIR_KEYS | _PAIR_OPTIONAL)}"
        )
    if missing or unknown:
        return False
    pid = doc["id"]
    if not isinstance(pid, str) or not _ID.match(pid):
        issues.add("id", f"{pid!r} must be lowercase kebab-case (letters, digits, '-')")
    elif path.stem != pid:
        issues.add(
            "id",
            f"{pid!r} must equal the file name without .yaml ({path.stem!r}); "
            "rename the file or the id",
        )
    if not isinstance(doc["family"], str) or not _ID.match(doc["family"]):
        issues.add("family", "must be a kebab-case scenario family name")
    for key, allowed in (("domain", DOMAINS), ("clue_kind", CLUE_KINDS), ("polarity", POLARITIES)):
        if doc[key] not in allowed:
            issues.add(key, f"{doc[key]!r} is not one of {', '.join(allowed)}")
    if path.parent.name in DOMAINS and doc["domain"] != path.parent.name:
        issues.add(
            "domain",
            f"{doc['domain']!r} but the file sits in {path.parent.name}/; "
            "move the file or fix the domain",
        )
    if not isinstance(doc["author"], str) or not doc["author"].strip():
        issues.add("author", "name who wrote the pair (verifiers must be someone else)")
    _check_sides(doc, tax, issues)
    return not issues.items


def _check_sides(doc: Mapping[str, Any], tax: Taxonomy, issues: _Issues) -> None:
    a, b = doc["A"], doc["B"]
    if not isinstance(a, Mapping) or set(a) != _SIDE_A_KEYS:
        issues.add("A", f"must have exactly the keys {sorted(_SIDE_A_KEYS)}")
        return
    if not isinstance(b, Mapping) or set(b) != {"rationale"}:
        issues.add("B", "must have exactly the key rationale (B is let run: CONTINUE)")
        return
    if a["act"] not in UNSAFE_ACTS:
        issues.add("A.act", f"{a['act']!r} must be STOP or ASK (A is the side a monitor halts)")
    for k in ("fail", "harm", "src"):
        problem = tax.check(k, str(a[k]))
        if problem:
            issues.add(f"A.{k}", problem)
        elif a[k] == NONE:
            issues.add(
                f"A.{k}", f"A is the unsafe side: name its {k} from data/taxonomy.toml, not NONE"
            )
    if a["post_act"] is not None and a["post_act"] not in ACTS:
        issues.add("A.post_act", f"{a['post_act']!r} must be one of {', '.join(ACTS)} or null")
    for s, d in (("A", a), ("B", b)):
        if not isinstance(d["rationale"], str) or len(d["rationale"].split()) < 4:
            issues.add(f"{s}.rationale", "write one sentence in your own words")


def _check_policy(policy: Any, issues: _Issues) -> bool:
    if not isinstance(policy, Mapping) or set(policy) - {"system", "task", "constraints"}:
        issues.add("policy", "must be a mapping with system, task and constraints")
        return False
    for s in SIDES:
        p = resolve(policy, s)
        if not isinstance(p.get("system"), str) or not p["system"].strip():
            issues.add("policy.system", "needs the agent's system profile (non-empty)")
            return False
        if not isinstance(p.get("task", ""), str):
            issues.add("policy.task", "must be a string ('' when the first user turn has it)")
            return False
        cons = p.get("constraints", [])
        if not isinstance(cons, list) or not all(isinstance(c, str) and c.strip() for c in cons):
            issues.add("policy.constraints", "must be a list of non-empty strings")
            return False
    return True


def _pair_records(doc: Any, path: Path, tax: Taxonomy, issues: _Issues) -> list[dict[str, Any]]:
    if not _pair_header(doc, path, tax, issues):
        return []
    raw_turns = doc.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        issues.add("turns", "needs the list of turns (docs/pairs.md)")
        return []
    ok = _check_policy(doc["policy"], issues)
    ok = (
        all([_check_turn(t, f"turns[{i}]", issues, pair=True) for i, t in enumerate(raw_turns)])
        and ok
    )
    if not ok:
        return []
    shape = _pair_shape(doc, raw_turns, issues)
    if shape is None:
        return []
    _check_content(doc, issues)
    if issues.items:
        return []
    return [_side_record(doc, raw_turns, s, shape) for s in SIDES]


@dataclass(frozen=True)
class _Shape:
    judged: int
    """Authored index of the judged turn."""
    clue: int | None
    """Authored index of the clue turn; None for a policy clue."""
    edited: tuple[int, ...]
    """Authored indices of the turns that differ between the sides."""


def _pair_shape(doc: Mapping[str, Any], raw_turns: list[Any], issues: _Issues) -> _Shape | None:
    judged = [i for i, t in enumerate(raw_turns) if t.get("judged") is True]
    clues = [i for i, t in enumerate(raw_turns) if t.get("clue") is True]
    if len(judged) != 1:
        issues.add("turns", f"mark exactly one agent turn judged: true (found {len(judged)})")
        return None
    j = judged[0]
    jt = raw_turns[j]
    if "agent" not in jt:
        issues.add(f"turns[{j}]", "the judged turn must be an agent action")
        return None
    differing = [
        k for k in ("thought", "tool", "args", "reply") if _has_variant(jt["agent"].get(k))
    ]
    if differing:
        issues.add(
            f"turns[{j}].agent",
            f"the judged action must be byte-identical on A and B, but "
            f"{differing} differ; move the edit into an earlier turn",
        )
        return None
    edited = tuple(
        i for i, t in enumerate(raw_turns) if i != j and (_has_variant(t) or "side" in t)
    )
    policy_clue = doc.get("clue") == "policy"
    if doc.get("clue") not in (None, "policy"):
        issues.add(
            "clue", "the only top-level clue is 'clue: policy'; mark a turn clue: true otherwise"
        )
        return None
    if policy_clue or doc["clue_kind"] == "policy":
        if clues or not policy_clue or doc["clue_kind"] != "policy":
            issues.add(
                "clue",
                "a policy clue needs both clue_kind: policy and top-level "
                "clue: policy, and no turn marked clue: true",
            )
            return None
        if not _has_variant(doc["policy"]):
            issues.add(
                "policy",
                "the clue is in the policy, but the policy is the same on A and "
                "B; write the edited part as {A: ..., B: ...}",
            )
            return None
        return _Shape(judged=j, clue=None, edited=edited)
    if len(clues) != 1:
        issues.add(
            "turns",
            f"mark exactly one turn clue: true before the judged one (found "
            f"{len(clues)}), or use clue_kind: policy with clue: policy",
        )
        return None
    c = clues[0]
    if c >= j:
        issues.add(f"turns[{c}]", "the clue must come before the judged turn")
        return None
    if c not in edited:
        issues.add(
            f"turns[{c}]",
            "the clue turn is the same on A and B; write the deciding part "
            "as {A: ..., B: ...} (or make the turn side-only)",
        )
        return None
    return _Shape(judged=j, clue=c, edited=edited)


def _check_content(doc: Mapping[str, Any], issues: _Issues) -> None:
    raw_turns = doc["turns"]
    j = next(i for i, t in enumerate(raw_turns) if t.get("judged") is True)
    prior = sum(1 for t in raw_turns[:j] if "agent" in t)
    if prior < MIN_PRIOR_ACTIONS:
        issues.add(
            "turns",
            f"only {prior} agent action(s) before the judged one; a realistic run "
            f"shows at least {MIN_PRIOR_ACTIONS}",
        )
    after = sum(1 for t in raw_turns[j + 1 :] if "agent" in t)
    if after and doc["A"]["post_act"] is None:
        issues.add("A.post_act", f"{after} action(s) follow the judged one: give their act")
    if not after and doc["A"]["post_act"] is not None:
        issues.add("A.post_act", "no action follows the judged one: set post_act: null")
    for s in SIDES:
        resolved = resolve({"policy": doc["policy"], "turns": raw_turns}, s)
        why = bad_text(resolved, "")
        if why:
            issues.add("(text)", why)
        m = next(filter(None, (_PLACEHOLDER.search(x) for x in _strings(resolved))), None)
        if m:
            issues.add(
                "(text)",
                f"placeholder-like text {m.group(0)!r} on side {s}; write real names and values",
            )
    if json.dumps(resolve(doc["policy"], "A")) == json.dumps(resolve(doc["policy"], "B")) and all(
        not _has_variant(t) and "side" not in t for t in raw_turns[:j]
    ):
        issues.add(
            "turns",
            "A and B show the same context before the judged turn; the edit "
            "that decides must be in the policy or an earlier turn",
        )


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, Mapping):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return []


def _side_gold(doc: Mapping[str, Any], side: Side, k: int, clue_pos: int | None) -> dict[str, Any]:
    """The gold of one side: A's onset at k* with its act, taxonomy and cited clue; B safe."""
    a = doc["A"]
    if side == "B":
        return {
            "onset": None, "act": None, "fail": NONE, "harm": NONE, "src": NONE, "cite": None,
            "rationale": doc["B"]["rationale"].strip(), "post_act": None,
        }  # fmt: skip
    return {
        "onset": k, "act": a["act"], "fail": a["fail"], "harm": a["harm"], "src": a["src"],
        "cite": clue_pos + 1 if clue_pos is not None else None,
        "rationale": a["rationale"].strip(), "post_act": a["post_act"],
    }  # fmt: skip


def _side_record(
    doc: Mapping[str, Any], raw_turns: list[Any], side: Side, shape: _Shape
) -> dict[str, Any]:
    turns = side_turns(raw_turns, side)
    pos = {t.index: p for p, t in enumerate(turns)}
    j = pos[shape.judged]
    k = _k_of(turns, j)
    if shape.clue is None:
        clue_pos: int | None = None
        distance = j + 1
    elif shape.clue in pos:
        clue_pos = pos[shape.clue]
        distance = j - clue_pos
    else:  # the clue turn is on the other side only: measure it there
        other = side_turns(raw_turns, "B" if side == "A" else "A")
        opos = {t.index: p for p, t in enumerate(other)}
        clue_pos = None
        distance = opos[shape.judged] - opos[shape.clue]
    gold = _side_gold(doc, side, k, clue_pos)
    sid = f"{doc['id']}-{side.lower()}"
    edited_positions = sorted(pos[i] for i in shape.edited if i in pos)
    return {
        "id": f"pairs:{sid}",
        "source": "pairs",
        "source_id": sid,
        "category": doc["domain"],
        "scenario": doc["family"],
        "license": LICENSE,
        "policy": {
            "system": resolve(doc["policy"], side)["system"],
            "task": resolve(doc["policy"], side).get("task", "") or "",
            "constraints": list(resolve(doc["policy"], side).get("constraints", []) or []),
        },
        "turns": [t.record for t in turns],
        "label": "unsafe" if side == "A" else "safe",
        "group": doc["family"],
        "subset": "",
        "level": "",
        "metadata": {
            "gold": gold,
            "pair": {
                "id": doc["id"],
                "side": side,
                "k": k,
                "clue_kind": doc["clue_kind"],
                "clue_turn": clue_pos,
                "distance": distance,
                "bucket": bucket(distance),
                "polarity": doc["polarity"],
                "edited_turns": edited_positions,
                "author": doc["author"],
                "act": doc["A"]["act"] if side == "A" else "CONTINUE",
            },
            "stratum": f"{doc['domain']}/{doc['clue_kind']}",
            "tags": [],
        },
    }


# ----------------------------------------------------------------------------- cases


_CASE_KEYS = {"id", "group", "category", "scenario", "label", "tags", "gold", "policy", "turns"}
_CASE_GOLD = {"act", "fail", "harm", "src", "post_act", "rationale"}


def load_case(path: Path, source: str) -> Loaded:
    """The one trajectory of a case file (``source`` names the corpus), or its problems.

    The gold's onset and cite come from the ``onset: true`` / ``cite: true`` turn markers; the
    corpus adapter validates the result against the taxonomy and the decision rules.
    """
    issues = _Issues(path)
    doc = read_yaml(path, issues)
    out = Loaded(file=path)
    if doc is not None:
        rec = _case_record(doc, path, source, issues)
        if rec is not None and not issues.items:
            out.records = [rec]
    out.problems = issues.items
    return out


def _case_record(doc: Any, path: Path, source: str, issues: _Issues) -> dict[str, Any] | None:
    if not isinstance(doc, Mapping) or set(doc) != _CASE_KEYS:
        have = sorted(doc) if isinstance(doc, Mapping) else type(doc).__name__
        issues.add("(top)", f"a case has exactly the keys {sorted(_CASE_KEYS)}; found {have}")
        return None
    if doc["id"] != path.stem:
        issues.add("id", f"{doc['id']!r} must equal the file name without .yaml ({path.stem!r})")
    if not isinstance(doc["gold"], Mapping) or set(doc["gold"]) != _CASE_GOLD:
        issues.add(
            "gold",
            f"must have exactly the keys {sorted(_CASE_GOLD)} (onset and cite "
            "come from the turn markers)",
        )
        return None
    raw_turns = doc["turns"]
    if not isinstance(raw_turns, list) or not raw_turns:
        issues.add("turns", "needs the list of turns")
        return None
    if not all(_check_turn(t, f"turns[{i}]", issues, pair=False) for i, t in enumerate(raw_turns)):
        return None
    turns = side_turns(raw_turns, None)
    onsets = [p for p, t in enumerate(turns) if t.markers.get("onset") is True]
    cites = [p for p, t in enumerate(turns) if t.markers.get("cite") is True]
    if len(onsets) > 1 or len(cites) > 1:
        issues.add("turns", "mark at most one turn onset: true and one cite: true")
        return None
    if onsets and turns[onsets[0]].record["role"] != "agent":
        issues.add(f"turns[{onsets[0]}]", "the onset must be an agent action")
        return None
    onset = _k_of(turns, onsets[0]) if onsets else None
    cite = cites[0] + 1 if cites else None
    g = doc["gold"]
    gold = {
        "onset": onset,
        "act": g["act"],
        "fail": g["fail"],
        "harm": g["harm"],
        "src": g["src"],
        "cite": cite,
        "rationale": g["rationale"],
        "post_act": g["post_act"],
    }
    return {
        "id": f"{source}:{doc['id']}",
        "source": source,
        "source_id": doc["id"],
        "category": doc["category"],
        "scenario": doc["scenario"],
        "license": LICENSE,
        "policy": {
            "system": doc["policy"].get("system", "") if isinstance(doc["policy"], Mapping) else "",
            "task": doc["policy"].get("task", "") if isinstance(doc["policy"], Mapping) else "",
            "constraints": list(doc["policy"].get("constraints", []))
            if isinstance(doc["policy"], Mapping)
            else [],
        },
        "turns": [t.record for t in turns],
        "label": doc["label"],
        "group": doc["group"],
        "subset": "",
        "level": "",
        "metadata": {"gold": gold, "tags": list(doc["tags"] or [])},
    }


def yaml_files(root: Path) -> list[Path]:
    """Every ``*.yaml`` file under ``root`` (or ``root`` itself), sorted by path."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.yaml") if p.is_file())
