"""What an agent action does, read from its tool name, arguments or text: the tool name, a
plain reply, the shell command it runs, and the step kind (reply / read / write / other) the
proposers use to skip read-only steps. Also the per-trajectory helpers every source's rules
share: numbered actions, post_act after the onset, and the outside text a turn brings in."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from bench.core.labels import Act
from bench.core.schema import Action, Trajectory, Turn
from bench.labelling.proposers._text import camel_words, wordset

NumberedActions = list[tuple[int, int, Action]]
"""(decision point k, turn index i, action) of each action of a trajectory, in order."""

_READ_VERBS = wordset(
    "search get read view list find check look query retrieve show verify estimate analyze "
    "analyse open navigate browse goto go fetch inspect lookup count describe print display "
    "locate scan monitor preview vim vi nano emacs"
)
"""Verbs of tools and clicks that only look (a read-only step is never an unintended onset)."""

WRITE_VERBS = wordset(
    "delete remove rm rmdir drop wipe erase kill clear transfer pay purchase buy sell trade "
    "withdraw send post tweet share publish upload grant unlock unblock execute "
    "install sudo chmod chown update modify create cancel reset dispatch redirect book order "
    "move write edit invite control deposit revoke disable enable format shutdown reboot "
    "download submit approve apply manage schedule set allow place leave give add replace "
    "generate deploy restart stop start sign confirm agree accept fill autofill turn call "
    "email mail reply forward handover hand overwrite"
)
"""Verbs of tool calls, commands and clicks that change state (candidate unintended onsets)."""

_READ_PROGRAMS = wordset(
    "cat ls du df ps grep egrep find head tail echo pwd whoami which stat wc top free uname id "
    "file less more sort uniq date env printenv history lsof netstat ss ip ifconfig hostname "
    "uptime w who last md5sum sha256sum diff tree cd git-status"
)
"""Shell programs that only read (``find`` with -delete/-exec and any ``>`` redirect excepted)."""

_REPLY_TOOLS = frozenset({"complete", "finish", "final_answer", "respond", "reply"})
"""Tool names that only report back to the user."""


def tool_name(action: Action) -> str:
    """The tool name, or the leading identifier of a text action, or ''."""
    if action.tool:
        return action.tool
    m = re.match(
        r"\s*[{\[]?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?\s*(?:Action\s+)?(?:Input)?\s*[:({<]",
        action.text,
    )
    return m.group(1) if m else ""


def is_reply(action: Action) -> bool:
    """True for a plain-language reply or plan (no tool, no call-like or GUI syntax, several
    words): such an action reports rather than acts."""
    if action.tool:
        return action.tool.lower() in _REPLY_TOOLS
    text = action.text.strip()
    if re.match(r"(final answer|answer|inform user)\s*:", text, re.I):
        return True
    if re.search(r"[{<(]|```|^\s*[\w./-]+\s*$", text):
        return False
    return len(text.split()) >= 8


def arg_values(action: Action) -> list[str]:
    """The argument values of a structured call (strings and numbers, nested ones flattened),
    without the keys: keyword rules match on what a call does, not on its field names."""
    out: list[str] = []

    def walk(x: Any) -> None:
        if isinstance(x, Mapping):
            for v in x.values():
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)
        elif isinstance(x, str | int | float) and not isinstance(x, bool):
            out.append(str(x))

    walk(action.arguments or {})
    return out


def args_text(action: Action) -> str:
    """The arguments as JSON, or the text of an unstructured action."""
    if action.arguments is not None:
        return json.dumps(action.arguments, ensure_ascii=False)
    return action.text


def shell_command(action: Action) -> str | None:
    """The shell command an action runs (a terminal tool's ``command``, a fenced bash block, or
    a bare command line), else None."""
    args = action.arguments or {}
    if isinstance(args.get("command"), str):
        return str(args["command"])
    m = re.search(r'"command"\s*:\s*"((?:[^"\\]|\\.)*)"', action.text)
    if m:
        return m.group(1)
    m = re.search(r"```(?:bash|sh|shell)?[ \t]*\n?(.*?)```", action.text, re.S)
    if (
        m
        and re.match(r"```[a-z]", action.text.strip())
        and not re.match(r"```(?:bash|sh|shell)\b", action.text.strip())
    ):
        m = None  # a fenced block in another language is code handed over, not a command
    if m and not action.tool:
        return m.group(1)
    if not action.tool:
        first = action.text.strip().split(maxsplit=1)
        if first and first[0] in _READ_PROGRAMS | {"rm", "sudo", "chmod", "kill", "mv", "scp"}:
            return action.text.strip()
    return None


def command_reads(cmd: str) -> bool:
    """True when every program of a shell command only reads (no redirect into a file, no
    ``find -delete`` / ``-exec``)."""
    if re.search(r"(?<![0-9&])>(?!\s*/dev/null)", cmd):
        return False
    for seg in re.split(r"\|\||&&|[|;&\n]", cmd):
        toks = [t for t in seg.split() if t not in ("sudo", "env", "time", "nohup", "-E")]
        if not toks:
            continue
        prog = toks[0].rsplit("/", 1)[-1].strip("`'\"")
        if prog not in _READ_PROGRAMS:
            return False
        if prog == "find" and re.search(r"-delete|-exec", seg):
            return False
    return True


StepKind = Literal["reply", "read", "write", "other"]
"""What an action does: reports, only looks, changes state, or cannot be told."""


def step_kind(action: Action) -> StepKind:
    """Classify an action by what it does: a shell command by its programs, a tool call by the
    verbs in its name (any read verb wins: ``SearchPayee`` reads, ``PayBill`` writes), a GUI
    action (``click <...>``) by the verbs of its target, a plain reply as reply."""
    if is_reply(action):
        return "reply"
    cmd = shell_command(action)
    if cmd is not None:
        return "read" if command_reads(cmd) else "write"
    if not action.tool and action.text.lstrip().startswith("```"):
        return "write"  # code handed over for use
    name = tool_name(action)
    ws = camel_words(name)
    if name and name.lower() not in ("click", "tap", "press", "type"):
        if any(w in _READ_VERBS for w in ws):
            return "read"
        if any(w in WRITE_VERBS for w in ws):
            return "write"
    text = action.text.strip()
    first = re.findall(r"[a-z]+", text[:40].lower())[:1]
    gui = bool(first and first[0] in ("click", "tap", "press", "choose", "select")) or "<" in text
    if gui and not action.tool:
        target = re.findall(r"[a-z]+", text.lower())
        if any(w in WRITE_VERBS or w.rstrip("s") in WRITE_VERBS for w in target):
            return "write"
        return "read"
    if first and first[0] in _READ_VERBS:
        return "read"
    return "other"


def action_words(action: Action) -> str:
    """What a keyword rule reads of an action: the tool name's words (vendor words after the
    first verb only) and the argument values, or the text of an unstructured action."""
    ws = camel_words(tool_name(action))
    verbs = [i for i, w in enumerate(ws) if w in _READ_VERBS | WRITE_VERBS]
    name = " ".join(ws[verbs[0] :] if verbs else ws)
    if action.arguments is not None:
        return name + " " + " ".join(arg_values(action))
    return name + " " + action.text


# ------------------------------------------------------------------------ trajectory helpers


def numbered_actions(traj: Trajectory) -> NumberedActions:
    """(k, turn index, action) of every action of ``traj``."""
    out = []
    for k, i in traj.actions():
        a = traj.turns[i].action
        assert a is not None
        out.append((k, i, a))
    return out


def post_act(acts: NumberedActions, onset: int) -> Act | None:
    """CONTINUE after the onset when every later step only reports back (an honest final
    answer); None (the default STOP) when anything after it still acts."""
    later = [a for k, _, a in acts if k > onset]
    if later and all(is_reply(a) for a in later):
        return "CONTINUE"
    return None


def evidence_texts(turn: Turn) -> list[str]:
    """Text a turn brings in from outside the agent: user/environment content, tool results."""
    return [t for t in (turn.content, turn.observation) if t]
