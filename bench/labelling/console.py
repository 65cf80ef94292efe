"""The review command's terminal session: the review screen, the interactive queue walk,
scripted reviews and the ``--stats`` report (``bench/review.py`` is the CLI over it).

The screen shows the policy, the numbered turns with each decision point k marked, the proposal
(rule and rationale), other reviewers' decisions unless blind, and the source's risk description:
everything a reviewer needs, none of which is ever committed. Decisions go through
``bench.labelling.reviews.make_review`` (validated, the note checked for copied upstream text)
and are appended to ``data/reviews/<reviewer>.jsonl``.
"""

from __future__ import annotations

import logging
import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from bench.core.errors import DataError
from bench.core.ids import source_of
from bench.core.jsonl import read_jsonl
from bench.core.paths import extracted
from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy
from bench.labelling.agreement import agreement
from bench.labelling.decisions import TrajectoryDecision
from bench.labelling.proposers._rules import RULES
from bench.labelling.reviews import (
    Kind,
    LabelFlipError,
    QueueItem,
    Review,
    adjudications,
    append_review,
    effective_decisions,
    is_current,
    item_status,
    latest,
    make_review,
    parse_assignments,
)

log = logging.getLogger(__name__)

SHOW_CHARS = 700
"""Characters of one text field shown before it is cut (``--full`` shows everything)."""
MAX_TRIES = 5
"""Attempts at one prompt before the item is skipped."""


# ------------------------------------------------------------------------------ loading


def load_trajectories(work: Path, sources: Sequence[str]) -> dict[str, Trajectory]:
    """Extracted trajectories of ``sources``; DataError saying how to extract when missing."""
    out: dict[str, Trajectory] = {}
    for s in sources:
        p = extracted(work, s)
        if not p.is_file():
            raise DataError(
                f"{p} not found: run `python bench/extract.py --source {s}` (the review shows "
                "the trajectory text, which is never committed)"
            )
        for d in read_jsonl(p):
            t = Trajectory.from_dict(d)
            out[t.id] = t
    return out


# ------------------------------------------------------------------------------ display


def _cut(text: str | None, full: bool) -> str:
    t = (text or "").strip()
    if full or len(t) <= SHOW_CHARS:
        return t
    return t[:SHOW_CHARS] + f" …[+{len(t) - SHOW_CHARS} chars; --full shows all]"


def _block(label: str, text: str | None, full: bool, indent: int = 6) -> list[str]:
    body = _cut(text, full)
    if not body:
        return []
    pad = " " * indent
    lines = []
    for i, para in enumerate(body.splitlines() or [""]):
        wrapped = textwrap.wrap(para, 96 - indent) or [""]
        for j, w in enumerate(wrapped):
            head = f"{label}: " if i == 0 and j == 0 else " " * (len(label) + 2)
            lines.append(pad + head + w)
    return lines


def describe_decision(d: TrajectoryDecision | Review) -> str:
    """One line: onset, act, taxonomy, cite."""
    if d.onset is None:
        return "SAFE (every step CONTINUE)"
    cite = f"turn {d.cite}" if d.cite is not None else "none"
    post = f" post={d.post_act}" if d.post_act else ""
    return (
        f"onset k={d.onset} act={d.act} fail={d.fail} harm={d.harm} src={d.src} cite={cite}{post}"
    )


def render(
    traj: Trajectory,
    proposal: TrajectoryDecision,
    others: Sequence[Review],
    *,
    position: str = "",
    full: bool = False,
) -> str:
    """The review screen for one trajectory (what a reviewer reads before deciding)."""
    m = traj.metadata
    extra = [f"{k}={m[k]}" for k in ("attack_type", "risk_type", "ambiguous") if k in m]
    out = [
        "=" * 100,
        f"{position} {traj.id}   upstream label: {traj.label}",
        f"source={traj.source} category={traj.category} scenario={traj.scenario or '-'} "
        + " ".join(extra),
        "-" * 100,
        "POLICY",
        *_block("system", traj.policy.system, full, 2),
        *_block("task", traj.policy.task, full, 2),
        *[line for c in traj.policy.constraints for line in _block("constraint", c, full, 2)],
        "TURNS (turn numbers are what cite= refers to; [k=N] marks decision point N)",
    ]
    ks = {i: k for k, i in traj.actions()}
    for n, t in enumerate(traj.turns, 1):
        if t.role == "agent":
            mark = f"[k={ks[n - 1]}]" if n - 1 in ks else "[no action]"
            out.append(f"{n:>4} agent {mark}")
            out += _block("thought", t.thought, full)
            out += _block("action", t.action.text if t.action else None, full)
            out += _block("result", t.observation, full)
        else:
            out.append(f"{n:>4} {t.role}")
            out += _block("content", t.content, full)
    rule = RULES.get(proposal.proposer)
    why = rule.description if rule else proposal.rationale
    out += [
        "-" * 100,
        f"PROPOSAL ({proposal.proposer}, confidence {proposal.confidence:.2f}): "
        + describe_decision(proposal),
        f"  rule: {why}",
    ]
    risk = m.get("risk_description")
    if risk:
        out.append("SOURCE RISK DESCRIPTION (labelling context; never copy it into a note)")
        out += _block("upstream", str(risk), full, 2)
    steps = m.get("step_labels")
    if steps:
        out.append(
            "SOURCE STEP LABELS (labelling context; never copy a rationale into a note): "
            + ", ".join(f"k={s.get('k')}:{s.get('label')}" for s in steps if s.get("label"))
        )
        for s in steps:
            if s.get("rationale"):
                out += _block(f"upstream k={s.get('k')}", str(s["rationale"]), full, 2)
    for r in others:
        out.append(f"REVIEW by {r.reviewer} ({r.decision}, {r.time}): {describe_decision(r)}")
        if r.note:
            out.append(f"  note: {r.note}")
    return "\n".join(out)


HELP = """\
  a  accept the proposal as shown (optionally with a note)
  s  set your own decision: onset (k or none), act, fail, harm, src, cite, then a note
  d  dispute the upstream trajectory label (needs a note), optionally with your decision
  k  skip this trajectory for now
  q  quit (everything decided so far is saved)
  ?  this help"""


class Prompter:
    """Reads answers from a stream (stdin by default); EOF ends the session."""

    def __init__(self, inp: TextIO, out: TextIO) -> None:
        self.inp, self.out = inp, out

    def ask(self, prompt: str, default: str = "") -> str | None:
        """One answer, ``default`` when blank; None at end of input."""
        shown = f"{prompt} [{default}]: " if default else f"{prompt}: "
        self.out.write(shown)
        self.out.flush()
        line = self.inp.readline()
        if not line:
            self.out.write("\n")
            return None
        ans = line.strip()
        return ans if ans else default


def _taxonomy_hint(tax: Taxonomy, kind: str) -> str:
    return ", ".join(sorted(tax.names(kind)))


def _check_field(key: str, ans: str, tax: Taxonomy, n_actions: int) -> str | None:
    """A problem with one prompted answer, else None (so a typo is asked again at once)."""
    none = ans.lower() in ("none", "null", "-")
    if key in ("onset", "cite"):
        if none:
            return None
        if not ans.isdigit() or (key == "onset" and not 1 <= int(ans) <= n_actions):
            rng = f"1..{n_actions}" if key == "onset" else "a turn number"
            return f"{key} must be {rng} or none"
        return None
    if key == "act":
        return None if ans.upper() in ("ASK", "STOP") else "act at the onset must be ASK or STOP"
    if key == "post_act":
        ok = ans.upper() in ("CONTINUE", "ASK", "STOP")
        return None if ok else "post_act must be CONTINUE, ASK or STOP"
    return tax.check(key, ans)


def _ask_values(
    p: Prompter, traj: Trajectory, proposal: TrajectoryDecision, tax: Taxonomy, dispute: bool
) -> dict[str, str] | None:
    """Prompt for label values, re-asking a field until it is valid; returns assignments, or
    None at end of input or after too many invalid answers."""
    v = proposal.label_values()
    n = len(traj.actions())
    fields: list[tuple[str, str, str]] = [
        ("onset", f"onset k, 1..{n} (or none for safe)", _fmt_opt(v["onset"])),
        ("act", "act at the onset (ASK/STOP)", v["act"] or "STOP"),
        ("fail", f"fail ({_taxonomy_hint(tax, 'fail')})", v["fail"]),
        ("harm", f"harm ({_taxonomy_hint(tax, 'harm')})", v["harm"]),
        ("src", f"src ({_taxonomy_hint(tax, 'src')})", v["src"]),
        ("cite", "cite: evidence turn number (or none)", _fmt_opt(v["cite"])),
        (
            "post_act",
            "act for the steps after the onset (CONTINUE/ASK/STOP)",
            v["post_act"] or "STOP",
        ),
    ]
    got: dict[str, str] = {}
    for key, text, default in fields:
        if key != "onset" and got["onset"].lower() in ("none", "null", "-"):
            break
        if key == "post_act" and int(got["onset"]) >= n:
            continue  # nothing follows the onset
        for _ in range(MAX_TRIES):
            ans = p.ask(text, default)
            if ans is None:
                return None
            problem = _check_field(key, ans, tax, n)
            if problem is None:
                got[key] = ans
                break
            p.out.write(f"  {problem}\n")
        else:
            return None
    note = p.ask("note, in your own words" + (" (required)" if dispute else ""), "")
    if note is None:
        return None
    got["note"] = note
    return got


def _fmt_opt(v: Any) -> str:
    return "none" if v is None else str(v)


@dataclass(frozen=True)
class _Session:
    """What every decision of one interactive session shares."""

    reviewer: str
    reviews_dir: Path
    tax: Taxonomy
    reviews: list[Review]
    """Every review so far; each recorded one is appended."""
    now: Callable[[], str] | None


def interactive(
    items: Sequence[QueueItem],
    trajs: Mapping[str, Trajectory],
    proposals: Mapping[str, TrajectoryDecision],
    reviews: list[Review],
    *,
    reviewer: str,
    reviews_dir: Path,
    tax: Taxonomy,
    blind: bool,
    full: bool,
    inp: TextIO,
    out: TextIO,
    now: Callable[[], str] | None = None,
) -> Counter[str]:
    """The interactive loop; returns counts of what was recorded."""
    p = Prompter(inp, out)
    session = _Session(reviewer, reviews_dir, tax, reviews, now)
    done: Counter[str] = Counter()
    by_traj = latest(reviews)
    for n, item in enumerate(items, 1):
        traj, prop = trajs[item.trajectory_id], proposals[item.trajectory_id]
        others = [] if blind else [r for r in by_traj.get(traj.id, {}).values()]
        pos = f"[{n}/{len(items)} {item.status}]"
        out.write(render(traj, prop, others, position=pos, full=full) + "\n")
        outcome = _decide_one(p, traj, prop, session)
        if outcome is None:  # input ended mid-decision
            return done
        if outcome == "quit":
            out.write(f"stopped; recorded {sum(done.values()) - done['skipped']} decision(s)\n")
            return done
        done[outcome] += 1
    out.write(f"queue done; recorded {sum(done.values()) - done['skipped']} decision(s)\n")
    return done


def _decide_one(p: Prompter, traj: Trajectory, prop: TrajectoryDecision, s: _Session) -> str | None:
    """One trajectory: the kind of review recorded, ``skipped``, ``quit``, or None when the
    input ended."""
    for _ in range(MAX_TRIES):
        ans = p.ask("decision: a)ccept s)et d)ispute k)skip q)uit ?)help", "")
        if ans is None or ans.lower() in ("q", "quit"):
            return "quit"
        a = ans.lower()[:1]
        if a == "?":
            p.out.write(HELP + "\n")
            continue
        if a == "k":
            return "skipped"
        if a not in ("a", "s", "d"):
            p.out.write("answer a, s, d, k, q or ?\n")
            continue
        kind: Kind = {"a": "accept", "s": "set", "d": "dispute"}[a]  # type: ignore[assignment]
        if kind == "accept":
            note = p.ask("note (optional)", "")
            if note is None:
                return None
            vals: dict[str, Any] = {"note": note} if note else {}
        else:
            got = _ask_values(p, traj, prop, s.tax, kind == "dispute")
            if got is None:
                return None
            vals = got
        made = _review_of(p, traj, prop, kind, vals, s)
        if made is None:
            return None
        if made == "retry":
            continue
        kind, r = made
        append_review(s.reviews_dir, r)
        s.reviews.append(r)
        p.out.write(f"recorded {kind}: {describe_decision(r)}\n")
        return kind
    p.out.write("too many invalid answers; skipping this trajectory\n")
    return "skipped"


def _review_of(
    p: Prompter,
    traj: Trajectory,
    prop: TrajectoryDecision,
    kind: Kind,
    vals: dict[str, Any],
    s: _Session,
) -> tuple[Kind, Review] | Literal["retry"] | None:
    """(its kind, the review to record); ``retry`` when it cannot be recorded as given (said why), None
    when the input ended. A decision that flips the upstream label is offered as a dispute
    rather than losing what was just typed."""
    stamp = s.now() if s.now else None
    try:
        return kind, make_review(traj, prop, kind, s.reviewer, vals, s.tax, time=stamp)
    except LabelFlipError:
        p.out.write(f"upstream labels {traj.id} {traj.label}: your decision disputes that.\n")
        ok = p.ask("record it as a dispute of the upstream label? y/n", "n")
        if ok is None:
            return None
        if not ok.lower().startswith("y"):
            p.out.write("not recorded\n")
            return "retry"
        if not vals.get("note"):
            note = p.ask("why does the upstream label look wrong (your own words)", "")
            if note is None:
                return None
            vals = {**vals, "note": note}
        try:
            return "dispute", make_review(
                traj, prop, "dispute", s.reviewer, vals, s.tax, time=stamp
            )
        except DataError as e:
            p.out.write(f"not recorded: {e}\n")
            return "retry"
    except DataError as e:
        p.out.write(f"not recorded: {e}\n")
        return "retry"


# ------------------------------------------------------------------------------ stats


def _k(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def stats_report(
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Sequence[Review],
    labels: Mapping[str, str] | None = None,
    subsets: Mapping[str, str] | None = None,
) -> str:
    """Coverage per source (per source x label, and per source x subset when ``subsets`` maps
    trajectory ids to their subset), proposer-vs-reviewer and reviewer-vs-reviewer agreement with
    Cohen's kappa on onset and act (overall and per source), proposer accuracy per rule, and the
    open conflicts. ``labels`` maps trajectory id -> upstream label (else the proposal's)."""
    by_traj, adj = latest(reviews), adjudications(reviews)
    decisions, conflicts = effective_decisions(proposals, reviews)

    def label_of(tid: str) -> str:
        return (labels or {}).get(tid) or ("safe" if proposals[tid].onset is None else "unsafe")

    lines = _coverage_lines(proposals, by_traj, adj, decisions, label_of)
    if subsets:
        sub = {t: s for t, s in subsets.items() if s and t in proposals}
        lines += _coverage_lines(
            {t: proposals[t] for t in sub},
            by_traj,
            adj,
            {t: d for t, d in decisions.items() if t in sub},
            lambda t: sub[t],
        )[2:]
    lines += _agreement_lines(proposals, by_traj)
    lines += _accuracy_lines(proposals, decisions)
    current = sum(
        1
        for rs in by_traj.values()
        for r in rs.values()
        if is_current(r, proposals.get(r.trajectory_id))
    )
    lines.append(
        f"REVIEWS: {len(reviews)} rows, {sum(len(v) for v in by_traj.values())} latest, "
        f"{current} current, {len(adj)} adjudications, reviewers: "
        + (", ".join(sorted({r.reviewer for r in reviews})) or "none")
    )
    lines.append(f"OPEN CONFLICTS: {len(conflicts)}")
    lines += [f"  {c.describe()}" for c in conflicts]
    return "\n".join(lines)


def _coverage_lines(
    proposals: Mapping[str, TrajectoryDecision],
    by_traj: Mapping[str, Mapping[str, Review]],
    adj: Mapping[str, Review],
    decisions: Mapping[str, TrajectoryDecision],
    label_of: Callable[[str], str],
) -> list[str]:
    """The coverage table: per source and per source x label."""
    cov: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for tid, p in proposals.items():
        status, _ = item_status(tid, p, by_traj, adj)
        for key in ((source_of(tid), "all"), (source_of(tid), label_of(tid))):
            cov[key][status] += 1
            cov[key]["total"] += 1
            if status == "stale":  # a full decision made against an older proposal still stands
                cov[key]["reviewed"] += 1
    lines = [
        "COVERAGE (reviewed = a review or an adjudication; stale = of those, reviewed against an "
        "older proposal: re-queued, but the decision still counts)"
    ]
    lines.append(
        f"  {'source':<11} {'label':<7} {'total':>6} {'reviewed':>8} {'%':>6} {'stale':>5} "
        f"{'conflict':>8} {'disputed':>8}"
    )
    disputed = Counter((source_of(t), label_of(t)) for t, d in decisions.items() if d.disputed)
    for (s, lab), c in sorted(cov.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        dis = (
            sum(v for (s2, _), v in disputed.items() if s2 == s)
            if lab == "all"
            else disputed[(s, lab)]
        )
        lines.append(
            f"  {s:<11} {lab:<7} {c['total']:>6} {c['reviewed']:>8} "
            f"{c['reviewed'] / c['total']:>6.1%} {c['stale']:>5} {c['conflict']:>8} {dis:>8}"
        )
    return lines


def _agreement_lines(
    proposals: Mapping[str, TrajectoryDecision], by_traj: Mapping[str, Mapping[str, Review]]
) -> list[str]:
    """Proposer vs reviewers, and between the first two reviewers of double-reviewed items."""
    pv = [
        (proposals[r.trajectory_id].label_values(), r.values())
        for rs in by_traj.values()
        for r in rs.values()
        if r.trajectory_id in proposals
    ]
    rr = []
    for rs in by_traj.values():
        names = sorted(rs)
        if len(names) >= 2:
            rr.append((rs[names[0]].values(), rs[names[1]].values()))
    a, b = agreement(pv), agreement(rr)
    out = [
        "AGREEMENT proposer vs reviewers (every latest review)",
        f"  n={a.n} onset agree={a.onset_agree:.1%} act agree={a.act_agree:.1%} "
        f"kappa onset={_k(a.kappa_onset)} kappa act={_k(a.kappa_act)}",
        "AGREEMENT between reviewers (double-reviewed items, first two reviewers by name)",
        f"  n={b.n} onset agree={b.onset_agree:.1%} act agree={b.act_agree:.1%} "
        f"kappa onset={_k(b.kappa_onset)} kappa act={_k(b.kappa_act)}",
    ]
    per: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for rs in by_traj.values():
        names = sorted(rs)
        if len(names) >= 2:
            per[source_of(rs[names[0]].trajectory_id)].append(
                (rs[names[0]].values(), rs[names[1]].values())
            )
    for s, pairs in sorted(per.items()):
        g = agreement(pairs)
        out.append(
            f"  {s:<11} n={g.n} onset agree={g.onset_agree:.1%} act agree={g.act_agree:.1%} "
            f"kappa onset={_k(g.kappa_onset)} kappa act={_k(g.kappa_act)}"
        )
    return out


def _accuracy_lines(
    proposals: Mapping[str, TrajectoryDecision], decisions: Mapping[str, TrajectoryDecision]
) -> list[str]:
    """Each proposer rule's onset and act accuracy against the reviewed decisions."""
    acc: dict[str, Counter[str]] = defaultdict(Counter)
    for tid, d in decisions.items():
        if d.reviewed and tid in proposals:
            p = proposals[tid]
            acc[p.proposer]["n"] += 1
            acc[p.proposer]["onset"] += p.onset == d.onset
            acc[p.proposer]["act"] += (p.act or "CONTINUE") == (d.act or "CONTINUE")
    lines = ["PROPOSER ACCURACY against reviewed decisions, per rule"]
    for rule, c in sorted(acc.items()):
        lines.append(
            f"  {rule:<28} n={c['n']:<5} onset={c['onset'] / c['n']:.1%} act={c['act'] / c['n']:.1%}"
        )
    if not acc:
        lines.append("  (no reviewed decisions yet)")
    return lines


# ------------------------------------------------------------------------------ main


def record_review(
    tid: str,
    kind: Kind,
    reviewer: str,
    values: Sequence[str],
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Sequence[Review],
    work: Path,
    tax: Taxonomy,
    *,
    reviews_dir: Path,
) -> tuple[Review, Path]:
    """A scripted review (``--accept/--set/--dispute/--adjudicate ID key=value ...``): checked
    and appended to ``<reviews_dir>/<reviewer>.jsonl``; DataError says what to fix."""
    if tid not in proposals:
        raise DataError(f"no proposal for {tid!r}: check the id (source:id) or run label.py")
    trajs = load_trajectories(work, [source_of(tid)])
    if tid not in trajs:
        raise DataError(f"{tid} is not in the extracted trajectories; re-run extract.py")
    vals = parse_assignments(values)
    base = None
    if "from" in vals:
        if kind != "adjudicate":
            raise DataError("from=REVIEWER only goes with --adjudicate")
        src_name = vals.pop("from")
        base = latest(reviews).get(tid, {}).get(src_name)
        if base is None:
            raise DataError(f"{src_name!r} has not reviewed {tid}")
    if kind == "adjudicate" and not vals.get("note"):
        raise DataError('an adjudication needs note="why this decision settles it"')
    r = make_review(trajs[tid], proposals[tid], kind, reviewer, vals, tax, base=base)
    return r, append_review(reviews_dir, r)
