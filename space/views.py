"""The Browse view as HTML: one decision point (gold label with the reviewers' notes, policy,
visible prefix numbered as the prompts number it, proposed action) and every judge's raw output.
Every string from the data is escaped here, whatever its source. The tables beside it are in
``tabs.py``."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from data import Results, SpaceDataError, Texts, on_hub
from fmt import DASH, esc

RAW_LIMIT = 20_000
"""Characters of one raw output shown (the predictions file keeps all of it)."""


def _block(title: str, body: str, cls: str = "") -> str:
    return f'<div class="fs-block {cls}"><div class="fs-title">{esc(title)}</div>{body}</div>'


def _pre(s: Any) -> str:
    return f'<pre class="fs-pre">{esc(s)}</pre>'


def _field(name: str, s: Any) -> str:
    """A bold field name over its text in a preformatted box."""
    return f"<div><b>{name}</b></div>{_pre(s)}"


def _muted(s: str) -> str:
    return f"<p class='fs-muted'>{s}</p>"


def _action_html(a: Mapping[str, Any]) -> str:
    """An action (tool, arguments, text) as the agent proposed it."""
    out = ""
    if a.get("tool"):
        out += f"<div><b>tool</b> <code>{esc(a['tool'])}</code></div>"
    arguments = a.get("arguments")
    if arguments:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments, indent=1)
        out += _field("arguments", args)
    return out + _pre(a.get("text"))


PHASES = {
    "onset": "onset: the step a careful judge should stop (or ask about)",
    "pre": "before the onset: fine to let run",
    "post": "after the onset: not scored (a judge that stopped the onset never sees it)",
    "safe": "a step of a safe trajectory",
}
"""What each gold phase means, in words."""


def _gold_html(res: Results, g: Mapping[str, Any], d: Mapping[str, Any] | None) -> str:
    """The gold label (ground truth first, the built record's label otherwise) and the
    reviewers' notes on its trajectory."""
    gold = (d or {}).get("gold") or {}
    phase = g.get("phase") or gold.get("phase")
    scored = g.get("scored", gold.get("scored"))
    items = [
        ("gold act", g.get("act") or gold.get("act")),
        ("binary", g.get("binary")),
        ("phase", PHASES.get(str(phase), phase)),
        ("onset at action k", g.get("onset", gold.get("onset"))),
        ("fail", g.get("fail") or gold.get("fail")),
        ("harm", g.get("harm") or gold.get("harm")),
        ("src", g.get("src") or gold.get("src")),
        ("evidence turn", gold.get("cite")),
        (
            "scored",
            None if scored is None else ("yes: counts in step metrics" if scored else "no"),
        ),
        ("reviewed", g.get("reviewed", gold.get("reviewed"))),
        ("label set by", gold.get("provenance")),
    ]
    table = "".join(
        f"<span>{esc(k)} <b>{esc(DASH if v is None or v == '' else v)}</b></span>" for k, v in items
    )
    tid = str(g.get("trajectory_id") or (d or {}).get("trajectory_id") or "")
    notes = "".join(
        f"<li><b>{esc(r.get('reviewer'))}</b> ({esc(r.get('decision'))}, {esc(r.get('time'))}): "
        f"{esc(r.get('note') or '(no note)')}</li>"
        for r in res.reviews(tid)
    )
    rationale = (
        f"<div><b>Rationale (reviewers' notes)</b><ul>{notes}</ul></div>"
        if notes
        else "<div class='fs-muted'>No reviewer note for this trajectory: the label comes from "
        "the rule-based proposer named above and the source's own label.</div>"
    )
    return _block("Gold label", f"<div class='fs-kv'>{table}</div>{rationale}", "fs-gold")


def _policy_html(pol: Mapping[str, Any]) -> str:
    out = ""
    if pol.get("system"):
        out += _field("system", pol["system"])
    if pol.get("task"):
        out += _field("task", pol["task"])
    if pol.get("constraints"):
        out += (
            "<div><b>constraints</b></div><ul>"
            + "".join(f"<li>{esc(c)}</li>" for c in pol["constraints"])
            + "</ul>"
        )
    return _block("Policy", out or _muted("(empty)"))


def _turn_html(n: int, t: Mapping[str, Any], cite: Any) -> str:
    """Turn ``n`` of the visible prefix; the turn the gold label cites is marked."""
    body = ""
    if t.get("content"):
        body += _pre(t["content"])
    if t.get("thought"):
        body += _field("thought", t["thought"])
    if t.get("action"):
        body += "<div><b>action</b></div>" + _action_html(t["action"])
    if t.get("observation"):
        body += _field("observation", t["observation"])
    mark = " fs-cited" if cite == n else ""
    star = " · cited as evidence" if cite == n else ""
    return (
        f"<div class='fs-turn{mark}'><div class='fs-turnhead'>#{n} {esc(t.get('role'))}{star}"
        f"</div>{body}</div>"
    )


def point_html(res: Results, texts: Texts, did: str) -> str:
    """The decision point as HTML (every string escaped): gold label with its rationale, the
    policy, the visible prefix (numbered as the prompts number it) and the proposed action."""
    g = res.ground_truth.get(did, {})
    d = texts.point(did)
    src = str(g.get("source") or (d or {}).get("source") or did.split(":", 1)[0])
    head = (
        f"<div class='fs-head'><b>{esc(did)}</b> · source <b>{esc(src)}</b> · category "
        f"<b>{esc(g.get('category') or (d or {}).get('category') or DASH)}</b> · split "
        f"<b>{esc(g.get('split') or (d or {}).get('split') or DASH)}</b>"
        + (" · <b>disputed</b> (not scored)" if g.get("disputed") else "")
        + "</div>"
    )
    if not g and d is None:
        return (
            head + "<p>This id is neither in the ground truth nor in the text available here.</p>"
        )
    parts = [head, _gold_html(res, g, d)]
    if d is None:
        why = texts.withheld.get(src)
        msg = (
            f"The text of {esc(src)} decision points is not shown here: {esc(why)}."
            if why
            else esc(
                texts.origin
                if texts.path is None
                else f"{did} is not in {texts.path.name} (version {texts.version})."
            )
        )
        parts.append(_block("Text", f"<p>{msg}</p>"))
        return "".join(parts)
    parts.append(_policy_html(d.get("policy") or {}))
    cite = (d.get("gold") or {}).get("cite")
    turns = [_turn_html(n, t, cite) for n, t in enumerate(d.get("history") or [], start=1)]
    parts.append(
        _block(
            f"Visible prefix ({len(turns)} turns)",
            "".join(turns) or _muted("(nothing before the first action)"),
        )
    )
    body = _field("thought", d["thought"]) if d.get("thought") else ""
    body += "<div><b>action</b></div>" + _action_html(d.get("action") or {})
    parts.append(
        _block(f"Proposed action (#{len(turns) + 1}, k = {d.get('k')})", body, "fs-action")
    )
    return "".join(parts)


def _shared_turns(mine: list[Any], theirs: list[Any]) -> set[int]:
    """Indices of the turns of ``mine`` that the other side has too, aligned as a diff aligns
    lines (a turn on one side only shifts the others without marking them)."""
    key = [json.dumps(t, sort_keys=True) for t in mine]
    other = [json.dumps(t, sort_keys=True) for t in theirs]
    sm = difflib.SequenceMatcher(a=key, b=other, autojunk=False)
    return {b.a + j for b in sm.get_matching_blocks() for j in range(b.size)}


def _side_html(d: Mapping[str, Any] | None, other: Mapping[str, Any] | None, why: str) -> str:
    """One side of a contrast pair: its policy, every turn before k* (a turn that differs from
    the other side's turn at the same place is highlighted) and the judged action."""
    if d is None:
        return _block("Text", f"<p>{esc(why)}</p>")
    pol, opol = d.get("policy") or {}, (other or {}).get("policy") or {}
    parts = [
        f"<div class='{'fs-diff' if other is not None and pol != opol else ''}'>"
        + _policy_html(pol)
        + "</div>"
    ]
    mine, theirs = d.get("history") or [], (other or {}).get("history") or []
    same = _shared_turns(mine, theirs) if other is not None else set(range(len(mine)))
    turns = []
    for n, t in enumerate(mine, start=1):
        differs = n - 1 not in same
        html = _turn_html(n, t, None)
        if differs:
            html = html.replace("class='fs-turn'", "class='fs-turn fs-diff'", 1).replace(
                "</div>", " · <b>differs</b></div>", 1
            )
        turns.append(html)
    parts.append(_block(f"Before k* ({len(turns)} turns)", "".join(turns) or _muted("(none)")))
    body = _field("thought", d["thought"]) if d.get("thought") else ""
    body += "<div><b>action</b></div>" + _action_html(d.get("action") or {})
    parts.append(_block(f"Judged action (#{len(turns) + 1}, k* = {d.get('k')})", body, "fs-action"))
    return "".join(parts)


def pair_html(res: Results, texts: Texts, pair: Mapping[str, Any]) -> str:
    """A contrast pair side by side (every string escaped): side A (a careful monitor asks or
    stops at k*) and side B (it lets the same action run), the turns that differ highlighted.
    ``pair`` is an entry of ``tabs.pair_index`` (its A and B point ids, clue kind, bucket)."""
    a, b = str(pair.get("A") or ""), str(pair.get("B") or "")
    da, db = texts.point(a), texts.point(b)
    why = texts.withheld.get("pairs") or (
        texts.origin if texts.path is None else f"not in {texts.path.name} ({texts.version})"
    )
    head = (
        f"<div class='fs-head'>clue kind <b>{esc(pair.get('clue_kind'))}</b> · clue distance "
        f"<b>{esc(pair.get('distance'))}</b> (bucket <b>{esc(pair.get('bucket'))}</b>) · domain "
        f"<b>{esc(pair.get('domain'))}</b> · split <b>{esc(pair.get('split'))}</b></div>"
    )
    cols = []
    for side, did, d, other, gold in (
        ("A", a, da, db, "ASK or STOP"),
        ("B", b, db, da, "CONTINUE"),
    ):
        title = (
            f"<div class='fs-sidehead'>Side {side}: <b>{esc(did)}</b> · gold at k*: "
            f"<b>{gold}</b></div>"
        )
        cols.append(f"<div class='fs-side'>{title}{_side_html(d, other, why)}</div>")
    return head + f"<div class='fs-pairgrid'>{''.join(cols)}</div>"


def raw_html(res: Results, texts: Texts, did: str) -> str:
    """Every judge's and probe's raw output for one decision point, each in a collapsible block. A
    judge's output can quote the trajectory, so it is withheld wherever the source's text is
    (R-Judge on the Hub): ids and verdicts stay, the words do not."""
    source = did.split(":", 1)[0]
    why = texts.withheld.get(source)
    if why is None and on_hub() and not res.redistributable(source):
        why = "its licence does not allow redistribution, so the Hub copy never shows it"
    if why is not None:
        return _muted(esc(f"Raw outputs for {source} are not shown here: {why}."))
    out = []
    for e in res.everyone:
        try:
            jv = res.verdicts(e["id"])
        except SpaceDataError as err:
            out.append(_muted(esc(err)))
            continue
        if did not in jv.rows:
            continue
        raw = jv.raw(did)
        cut = len(raw) > RAW_LIMIT
        body = (
            _pre(raw[:RAW_LIMIT] + ("\n[… cut for display]" if cut else ""))
            if raw
            else _muted("(no raw output: this judge returns verdicts directly)")
        )
        out.append(
            f"<details class='fs-raw'><summary>{esc(e['display_name'])}</summary>{body}</details>"
        )
    return "".join(out) or _muted("No judge has a verdict on this decision point.")
