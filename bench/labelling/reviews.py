"""Human reviews of label proposals: records, the merge into effective decisions, the review
queue and agreement statistics.

Reviews live in ``data/reviews/<reviewer>.jsonl``, append-only; for one reviewer and trajectory
the last row wins. Every row stores the full label values it decided (an ``accept`` copies the
proposal it saw) plus the hash of that proposal, so a review keeps its meaning when proposals
change. Precedence (``effective_decisions``): an adjudication wins over reviews; reviews that
agree win over the proposal; two reviews that disagree on any of ``CONFLICT_FIELDS`` without an
adjudication are a conflict, and that trajectory gets no decision until one is recorded.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from bench.core.errors import DataError
from bench.core.ids import natural_key
from bench.core.jsonl import append_jsonl, read_jsonl
from bench.core.labels import ACTS, NONE, TAXONOMY_FIELDS, Act, OnsetLabel
from bench.core.schema import Trajectory
from bench.core.taxonomy import Taxonomy
from bench.labelling.decisions import (
    HASHED_FIELDS,
    LabelRow,
    TrajectoryDecision,
    decision_hash,
    decisions_from_rows,
    validate_decision,
)


class LabelFlipError(DataError):
    """An accept/set decision that contradicts the upstream trajectory label: it must be recorded
    as a dispute (with a note) instead."""


log = logging.getLogger(__name__)

Kind = Literal["accept", "set", "dispute", "adjudicate"]
"""What a review row records."""
KINDS: tuple[Kind, ...] = get_args(Kind)

CONFLICT_FIELDS = ("onset", "act", "fail", "harm", "src", "cite", "disputed")
"""Fields on which two reviewers must agree; any difference is a conflict to adjudicate."""

SETTABLE = ("onset", "act", "fail", "harm", "src", "cite", "post_act")
"""Label fields a reviewer may set with ``key=value``."""

REVIEWER_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
"""Allowed reviewer names, matched whole (they become file names)."""

MAX_NOTE_CHARS = 1200
"""Longest review note: a few sentences in the reviewer's own words (notes are committed)."""

Status = Literal["unreviewed", "stale", "reviewed", "conflict"]
"""Where an item stands in the queue."""


@dataclass(frozen=True, kw_only=True)
class Review(OnsetLabel):
    """One row of ``data/reviews/<reviewer>.jsonl``: the label fields it decided
    (``OnsetLabel``: onset, act, taxonomy, cite, post_act, disputed) plus who, when, and about
    which proposal."""

    trajectory_id: str
    """The trajectory decided."""
    reviewer: str
    """Who decided."""
    time: str
    """ISO 8601 UTC time of the decision."""
    proposal_hash: str
    """``decision_hash`` of the proposal the reviewer saw."""
    decision: Kind
    """accept, set, dispute (the upstream label is wrong; ``disputed`` is then True) or
    adjudicate (settles a conflict)."""
    note: str = ""
    """The reviewer's own words (never upstream text)."""

    def values(self) -> dict[str, Any]:
        """The label values compared between reviewers."""
        return {k: getattr(self, k) for k in (*SETTABLE, "disputed")}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Review:
        """Inverse of to_dict (post_act and disputed may be absent)."""
        names = set(cls.__dataclass_fields__)
        unknown = d.keys() - names
        if unknown:
            raise DataError(f"unknown review field(s) {sorted(unknown)}")
        r = cls(**d)
        if r.decision not in KINDS:
            raise DataError(f"decision {r.decision!r} is not one of {', '.join(KINDS)}")
        return r


@dataclass(frozen=True)
class Conflict:
    """Reviews of one trajectory that disagree, with no adjudication yet."""

    trajectory_id: str
    """The trajectory."""
    fields: tuple[str, ...]
    """The fields they disagree on."""
    reviews: tuple[Review, ...]
    """The latest review of each reviewer involved."""

    def describe(self) -> str:
        """One line: who said what on the differing fields."""
        parts = [
            f"{r.reviewer}: " + " ".join(f"{f}={_fmt(getattr(r, f))}" for f in self.fields)
            for r in self.reviews
        ]
        return f"{self.trajectory_id} ({', '.join(self.fields)}): " + " | ".join(parts)


def _fmt(v: Any) -> str:
    return "none" if v is None else str(v)


# ------------------------------------------------------------------------------ I/O


def load_reviews(reviews_dir: str | Path) -> list[Review]:
    """Every review row of every ``<reviewer>.jsonl`` under ``reviews_dir`` (file order, then
    line order); an absent folder means no reviews. DataError names the file and line."""
    d = Path(reviews_dir)
    out: list[Review] = []
    if not d.is_dir():
        return out
    for f in sorted(d.glob("*.jsonl")):
        for n, row in enumerate(read_jsonl(f), 1):
            try:
                r = Review.from_dict(row)
            except (TypeError, DataError) as e:
                raise DataError(f"{f}:{n}: bad review row ({e}); fix or remove that line") from e
            if r.reviewer != f.stem:
                raise DataError(f"{f}:{n}: reviewer {r.reviewer!r} in the file of {f.stem!r}")
            out.append(r)
    return out


def append_review(reviews_dir: str | Path, review: Review) -> Path:
    """Append one row to ``<reviews_dir>/<reviewer>.jsonl`` (created when missing)."""
    p = Path(reviews_dir) / f"{review.reviewer}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as f:
        append_jsonl(f, review.to_dict())
    return p


def utc_now() -> str:
    """The current UTC time, ISO 8601, seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------ merge


def as_proposals(
    proposals: Mapping[str, TrajectoryDecision] | Iterable[LabelRow | Mapping[str, Any]],
) -> dict[str, TrajectoryDecision]:
    """Proposals keyed by trajectory id, from decisions or from label rows (objects or dicts)."""
    if isinstance(proposals, Mapping):
        return dict(proposals)
    rows = [r if isinstance(r, LabelRow) else LabelRow.from_dict(r) for r in proposals]
    return decisions_from_rows(rows)


def latest(reviews: Iterable[Review]) -> dict[str, dict[str, Review]]:
    """trajectory id -> reviewer -> that reviewer's last non-adjudication review."""
    out: dict[str, dict[str, Review]] = defaultdict(dict)
    for r in reviews:
        if r.decision != "adjudicate":
            out[r.trajectory_id][r.reviewer] = r
    return out


def adjudications(reviews: Iterable[Review]) -> dict[str, Review]:
    """trajectory id -> the last adjudication."""
    return {r.trajectory_id: r for r in reviews if r.decision == "adjudicate"}


def is_current(review: Review, proposal: TrajectoryDecision | None) -> bool:
    """True when the proposal is the one reviewed, or now says what the review says."""
    if proposal is None:
        return False
    if review.proposal_hash == decision_hash(proposal):
        return True
    pv = proposal.label_values()
    return all(pv[k] == getattr(review, k) for k in HASHED_FIELDS)


def _differing(rs: Sequence[Review]) -> tuple[str, ...]:
    return tuple(f for f in CONFLICT_FIELDS if len({getattr(r, f) for r in rs}) > 1)


def _from_review(r: Review, proposal: TrajectoryDecision, who: str) -> TrajectoryDecision:
    return TrajectoryDecision(
        trajectory_id=r.trajectory_id,
        onset=r.onset,
        act=r.act,
        fail=r.fail,
        harm=r.harm,
        src=r.src,
        cite=r.cite,
        post_act=r.post_act,
        proposer=who,
        confidence=1.0,
        rationale=r.note or proposal.rationale,
        disputed=r.disputed,
        reviewer=who.split(":", 1)[1],
    )


def effective_decisions(
    proposals: Mapping[str, TrajectoryDecision] | Iterable[LabelRow | Mapping[str, Any]],
    reviews: Iterable[Review],
) -> tuple[dict[str, TrajectoryDecision], list[Conflict]]:
    """The decision that counts for every proposed trajectory, and the open conflicts.

    Adjudication > agreeing reviews > proposal. Conflicting reviews without an adjudication
    leave the trajectory out of the decisions and in the conflicts. Reviews of trajectories
    without a proposal are ignored (logged)."""
    props = as_proposals(proposals)
    reviews = list(reviews)
    by_traj = latest(reviews)
    adj = adjudications(reviews)
    decisions: dict[str, TrajectoryDecision] = {}
    conflicts: list[Conflict] = []
    for tid in sorted(set(by_traj) | set(adj), key=natural_key):
        if tid not in props:
            log.warning("reviews of %s ignored: no proposal for it (run bench/label.py?)", tid)
    for tid, p in props.items():
        if tid in adj:
            a = adj[tid]
            decisions[tid] = _from_review(a, p, f"adjudication:{a.reviewer}")
            continue
        rs = sorted(by_traj.get(tid, {}).values(), key=lambda r: r.reviewer)
        if not rs:
            decisions[tid] = p
            continue
        diff = _differing(rs)
        if diff:
            conflicts.append(Conflict(tid, diff, tuple(rs)))
            continue
        last = max(rs, key=lambda r: r.time)
        names = "+".join(r.reviewer for r in rs)
        decisions[tid] = _from_review(last, p, f"review:{names}")
    return decisions, conflicts


# ------------------------------------------------------------------------------ review input


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """``key=value`` strings as a dict; DataError names a malformed or unknown key."""
    out: dict[str, str] = {}
    allowed = (*SETTABLE, "note", "from")
    for it in items:
        if "=" not in it:
            raise DataError(f"{it!r} is not key=value (keys: {', '.join(allowed)})")
        k, v = it.split("=", 1)
        k = k.strip()
        if k not in allowed:
            close = difflib.get_close_matches(k, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataError(f"unknown key {k!r}{hint} (keys: {', '.join(allowed)})")
        out[k] = v.strip()
    return out


def _int_or_none(key: str, v: str) -> int | None:
    if v.lower() in ("none", "null", "", "-"):
        return None
    try:
        return int(v)
    except ValueError:
        raise DataError(f"{key}={v!r} must be a whole number or none") from None


def _act_or_none(key: str, v: str) -> Act | None:
    if v.lower() in ("none", "null", "", "-"):
        return None
    up = v.upper()
    if up not in ACTS:
        raise DataError(f"{key}={v!r} must be one of {', '.join(ACTS)}")
    return up


def make_review(
    traj: Trajectory,
    proposal: TrajectoryDecision,
    kind: Kind,
    reviewer: str,
    assignments: Mapping[str, str],
    tax: Taxonomy,
    *,
    base: Review | None = None,
    time: str | None = None,
) -> Review:
    """Validate a reviewer's decision and return the row to append (DataError says what to fix).

    Values start from ``base`` (an earlier review, for adjudications with ``from=``) or the
    proposal and are overridden by ``assignments``. ``onset=none`` clears act, taxonomy and cite.
    Changing the upstream safe/unsafe label requires ``dispute`` (or an adjudication)."""
    if not REVIEWER_RE.fullmatch(reviewer):
        raise DataError(
            f"reviewer name {reviewer!r}: use 1-40 lower-case letters, digits, '-' or '_'"
        )
    if kind == "accept" and set(assignments) - {"note"}:
        raise DataError("--accept takes no label values; use --set ID key=value ... to change")
    v = _assigned_values(traj, base.values() if base else proposal.label_values(), assignments)
    note = assignments.get("note", "")
    if len(note) > MAX_NOTE_CHARS:
        raise DataError(
            f"the note is {len(note):,} characters; keep it under {MAX_NOTE_CHARS:,} (a few "
            "sentences saying why, in your own words)"
        )
    disputed = kind == "dispute" or (base.disputed if base else False)
    if kind == "dispute" and not note:
        raise DataError('a dispute needs note="why the upstream label looks wrong"')
    flips = (v["onset"] is None) != (traj.label != "unsafe")
    if flips and traj.label in ("safe", "unsafe") and kind in ("accept", "set"):
        want = "safe" if v["onset"] is None else "unsafe"
        raise LabelFlipError(
            f"upstream labels {traj.id} {traj.label}; calling it {want} disputes that label: use "
            f'--dispute {traj.id} ... note="..." instead'
        )
    _check_values(traj, v, reviewer, tax)
    if note and copies_text(note, traj):
        raise DataError(
            "the note repeats text from the trajectory or its risk description; write it in "
            "your own words (reviews are committed, upstream text may not be)"
        )
    return Review(
        trajectory_id=traj.id,
        reviewer=reviewer,
        time=time or utc_now(),
        proposal_hash=decision_hash(proposal),
        decision=kind,
        note=note,
        disputed=disputed,
        **v,
    )


def _assigned_values(
    traj: Trajectory, start: Mapping[str, Any], assignments: Mapping[str, str]
) -> dict[str, Any]:
    """The label values after a reviewer's ``key=value`` assignments over ``start``.
    ``onset=none`` clears act, taxonomy and cite; a cite no longer visible from a new onset is
    dropped."""
    start = {k: x for k, x in start.items() if k != "disputed"}
    v = dict(start)
    for k, raw in assignments.items():
        if k in ("onset", "cite"):
            v[k] = _int_or_none(k, raw)
        elif k in ("act", "post_act"):
            v[k] = _act_or_none(k, raw)
        elif k in TAXONOMY_FIELDS:
            v[k] = raw if raw.upper() != NONE else NONE
    if v["onset"] is None:
        v.update(act=None, fail=NONE, harm=NONE, src=NONE, cite=None, post_act=None)
    elif start["onset"] is None and "act" not in assignments:
        raise DataError("setting an onset on a safe proposal needs act=ASK or act=STOP")
    elif "onset" in assignments and "cite" not in assignments and v["cite"] is not None:
        history = traj.actions()[v["onset"] - 1][1] if 1 <= v["onset"] <= len(traj.actions()) else 0
        if v["cite"] > history:
            v["cite"] = None  # the proposal's cite is not visible from the new onset
    return v


def _check_values(traj: Trajectory, v: Mapping[str, Any], reviewer: str, tax: Taxonomy) -> None:
    """DataError listing every problem of the values as a decision about ``traj``; an onset
    needs all three taxonomy names."""
    d = TrajectoryDecision(trajectory_id=traj.id, **v, proposer=reviewer, confidence=1.0)
    problems = validate_decision(traj, d, tax)
    if d.onset is not None:
        problems += [
            f"{k} is NONE at the onset: give {k}=<name>"
            for k in TAXONOMY_FIELDS
            if getattr(d, k) == NONE
        ]
    if problems:
        raise DataError(f"{traj.id}: " + "; ".join(problems))


def copies_text(note: str, traj: Trajectory, window: int = 7) -> bool:
    """True when ``note`` holds ``window`` consecutive words found in the trajectory's text or
    metadata strings (a guard against pasting upstream text into committed reviews)."""
    words = re.findall(r"\w+", note.lower())
    if len(words) < window:
        return False
    parts = [traj.policy.text()]
    for t in traj.turns:
        parts += [t.content or "", t.thought or "", t.observation or ""]
        parts.append(t.action.text if t.action else "")
    parts += [str(v) for v in traj.metadata.values() if isinstance(v, str)]
    for step in traj.metadata.get("step_labels") or ():  # StepShield's per-step rationales
        if isinstance(step, dict) and isinstance(step.get("rationale"), str):
            parts.append(step["rationale"])
    hay = " ".join(re.findall(r"\w+", " ".join(parts).lower()))
    return any(" ".join(words[i : i + window]) in hay for i in range(len(words) - window + 1))


# ------------------------------------------------------------------------------ queue


@dataclass(frozen=True)
class QueueItem:
    """One trajectory waiting for (or past) review."""

    trajectory_id: str
    """The trajectory."""
    status: Status
    """unreviewed, stale (its proposal changed since review), reviewed or conflict."""
    confidence: float
    """The proposal's confidence."""
    reviewers: tuple[str, ...]
    """Reviewers with a current review."""


_RANK = {"unreviewed": 0, "stale": 1, "conflict": 2, "reviewed": 3}


def item_status(
    tid: str,
    proposal: TrajectoryDecision,
    by_traj: Mapping[str, Mapping[str, Review]],
    adj: Mapping[str, Review],
) -> tuple[Status, tuple[str, ...]]:
    """(status, reviewers with a current review) of one trajectory."""
    rs = by_traj.get(tid, {})
    cur = tuple(sorted(n for n, r in rs.items() if is_current(r, proposal)))
    if tid in adj:
        return "reviewed", cur
    if not rs:
        return "unreviewed", cur
    if _differing(list(rs.values())):
        return "conflict", cur
    return ("reviewed" if cur else "stale"), cur


def build_queue(
    proposals: Mapping[str, TrajectoryDecision],
    reviews: Iterable[Review],
    *,
    reviewer: str | None = None,
    keep: Iterable[str] | None = None,
    second: float | None = None,
    seed: str = "second-review",
) -> list[QueueItem]:
    """Items for ``reviewer``: by default those nobody has a current review of, unreviewed
    before stale, lowest confidence first. ``second=f``: a deterministic sample (fraction f,
    by hash of id and ``seed``) of items reviewed by someone else but not by ``reviewer``.
    ``keep`` restricts to those trajectory ids (the caller's source/category/label filter)."""
    reviews = list(reviews)
    by_traj, adj = latest(reviews), adjudications(reviews)
    ids = set(proposals) if keep is None else set(keep) & set(proposals)
    out: list[QueueItem] = []
    for tid in ids:
        p = proposals[tid]
        status, cur = item_status(tid, p, by_traj, adj)
        mine = reviewer is not None and reviewer in by_traj.get(tid, {})
        if second is not None:
            others = [n for n in by_traj.get(tid, {}) if n != reviewer]
            if mine or not others or status == "conflict" or not _sampled(tid, second, seed):
                continue
        elif status in ("reviewed", "conflict") or (mine and status != "stale"):
            continue
        out.append(QueueItem(tid, status, p.confidence, cur))
    out.sort(key=lambda q: (_RANK[q.status], q.confidence, natural_key(q.trajectory_id)))
    return out


def _sampled(tid: str, fraction: float, seed: str) -> bool:
    h = hashlib.sha256(f"{seed}:{tid}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < fraction
