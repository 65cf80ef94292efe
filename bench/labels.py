"""Trajectory-level labelling decisions and the per-step label rows derived from them.

A labeller (a rule-based proposer, a reviewer, an adjudicator) decides one thing per trajectory:
where it starts going wrong (the *onset*, a decision point k, or None when it is safe), what a
careful monitor should answer there (ASK or STOP), the taxonomy, and which earlier turn carries
the evidence (``cite``). ``step_labels`` turns that into one ``LabelRow`` per decision point; it is
the only place this expansion is written, and proposers, the review merge and the build all call
it. The rules (data/GUIDELINES.md):

- safe trajectory: every step CONTINUE, phase ``safe``;
- unsafe: steps before the onset CONTINUE (``pre``); the onset gets the act, taxonomy and cite
  (``onset``); steps after it get ``post_act`` (STOP unless set), phase ``post``, ``scored=False``.

``data/labels/<source>.jsonl`` holds the rows (ids and labels only); ``decisions_from_rows``
recovers each trajectory's decision from them, so the row file is the single stored form.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.errors import ConfigError, DataError
from bench.jsonl import content_hash, read_jsonl, write_jsonl
from bench.paths import REPO_ROOT
from bench.schema import ACTS, Act, GoldLabel, Phase, Trajectory

TAXONOMY_FILE = REPO_ROOT / "data" / "taxonomy.toml"
"""The label vocabulary and the per-source mapping tables."""

NONE = "NONE"
"""Absence marker for fail/harm/src: nothing applies. Never a class."""

TAXONOMY_FIELDS = ("fail", "harm", "src")
"""The three taxonomy fields of a label."""

UNSAFE_ACTS: tuple[Act, ...] = ("ASK", "STOP")
"""Acts allowed at an onset."""

DEFAULT_POST_ACT: Act = "STOP"
"""Act given to steps after the onset when a decision does not say otherwise."""


# ------------------------------------------------------------------------------ taxonomy


@dataclass(frozen=True)
class Taxonomy:
    """The closed label sets and the source mapping tables of data/taxonomy.toml."""

    fail: Mapping[str, str]
    """Failure-mode name -> one-line definition."""
    harm: Mapping[str, str]
    """Harm-type name -> definition."""
    src: Mapping[str, str]
    """Risk-source name -> definition."""
    maps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """``[map.<source>.<table>]``: source -> table -> {source value: project value or list}."""

    def names(self, kind: str) -> Mapping[str, str]:
        """The names of one taxonomy field (fail, harm or src)."""
        if kind not in TAXONOMY_FIELDS:
            raise ConfigError(f"unknown taxonomy field {kind!r}: use one of fail, harm, src")
        return {"fail": self.fail, "harm": self.harm, "src": self.src}[kind]

    def check(self, kind: str, value: str) -> str | None:
        """A problem with ``value`` as a ``kind`` name (NONE is allowed), else None."""
        names = self.names(kind)
        if value == NONE or value in names:
            return None
        close = difflib.get_close_matches(value, list(names), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return (
            f"{kind}={value!r} is not in data/taxonomy.toml [{kind}]{hint} "
            f"(known: {', '.join(sorted(names))}, or NONE)"
        )

    def table(self, source: str, name: str) -> Mapping[str, Any]:
        """The mapping table ``[map.<source>.<name>]``; ConfigError when it is missing."""
        try:
            return self.maps[source][name]
        except KeyError:
            raise ConfigError(
                f"data/taxonomy.toml has no table [map.{source}.{name}]: restore it from git"
            ) from None


def load_taxonomy(path: Path = TAXONOMY_FILE) -> Taxonomy:
    """Read the vocabulary and mapping tables; ConfigError when the file is unreadable."""
    try:
        with path.open("rb") as f:
            tax = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}; restore data/taxonomy.toml from git") from e
    acts = tuple(tax.get("act", {}))
    if acts != ACTS:
        raise ConfigError(f"{path}: [act] must list exactly {', '.join(ACTS)}, found {acts}")
    return Taxonomy(
        fail=dict(tax.get("fail", {})),
        harm=dict(tax.get("harm", {})),
        src=dict(tax.get("src", {})),
        maps=dict(tax.get("map", {})),
    )


# ------------------------------------------------------------------------------ decisions


@dataclass(frozen=True)
class TrajectoryDecision:
    """One labeller's decision about a whole trajectory; ``step_labels`` expands it."""

    trajectory_id: str
    """The trajectory it is about."""
    onset: int | None
    """k of the first action a careful monitor must not let run unchecked; None when safe."""
    act: Act | None
    """ASK or STOP at the onset; None when safe."""
    fail: str = NONE
    """Failure mode at the onset (NONE when safe)."""
    harm: str = NONE
    """Harm type (NONE when safe)."""
    src: str = NONE
    """Risk source (NONE when safe)."""
    cite: int | None = None
    """1-based number of the evidence turn in the onset's history, or None."""
    post_act: Act | None = None
    """Act for steps after the onset; None means the default (STOP)."""
    proposer: str = ""
    """Who decided: a proposer rule name, ``review:<names>`` or ``adjudication:<name>``."""
    confidence: float = 0.0
    """0..1: how sure the decider is (1.0 for human decisions)."""
    rationale: str = ""
    """Why, in the project's own words (never upstream text)."""
    disputed: bool = False
    """True when a reviewer marked the upstream trajectory label as wrong."""
    reviewer: str = ""
    """Who reviewed it (names joined by ``+``); empty for an unreviewed proposal."""

    @property
    def reviewed(self) -> bool:
        """True when a human review or adjudication set or confirmed it."""
        return bool(self.reviewer)

    def label_values(self) -> dict[str, Any]:
        """The label content (what a reviewer judges), without provenance."""
        return {
            "onset": self.onset,
            "act": self.act,
            "fail": self.fail,
            "harm": self.harm,
            "src": self.src,
            "cite": self.cite,
            "post_act": self.post_act,
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return asdict(self)


HASHED_FIELDS = ("onset", "act", "fail", "harm", "src", "cite")
"""The scored label values a proposal hash covers (post_act is unscored and left out, so a
decision keeps its hash through the row file, where an unset post_act reads back as STOP)."""


def decision_hash(decision: TrajectoryDecision) -> str:
    """Hash of what a reviewer judges in a proposal: trajectory id and ``HASHED_FIELDS``. A
    changed proposer name or confidence with the same labels keeps the hash."""
    v = decision.label_values()
    return content_hash(
        {"trajectory_id": decision.trajectory_id} | {k: v[k] for k in HASHED_FIELDS}
    )


def validate_decision(traj: Trajectory, d: TrajectoryDecision, tax: Taxonomy) -> list[str]:
    """Every problem with ``d`` as a decision about ``traj``; empty when valid."""
    out: list[str] = []
    if d.trajectory_id != traj.id:
        out.append(f"decision is for {d.trajectory_id!r}, not {traj.id!r}")
    if not 0.0 <= d.confidence <= 1.0:
        out.append(f"confidence {d.confidence} is outside 0..1")
    actions = traj.actions()
    n = len(actions)
    if d.onset is None:
        if d.act is not None:
            out.append(f"act={d.act} given without an onset (a safe trajectory has no act)")
        for k in TAXONOMY_FIELDS:
            if getattr(d, k) != NONE:
                out.append(f"{k}={getattr(d, k)!r} given without an onset (use NONE)")
        if d.cite is not None:
            out.append("cite given without an onset")
        return out
    if isinstance(d.onset, bool) or not isinstance(d.onset, int) or not 1 <= d.onset <= n:
        return out + [f"onset={d.onset!r} is not a decision point of {traj.id} (1..{n})"]
    if d.act not in UNSAFE_ACTS:
        out.append(f"act at the onset must be ASK or STOP, not {d.act!r}")
    for k in TAXONOMY_FIELDS:
        problem = tax.check(k, getattr(d, k))
        if problem:
            out.append(problem)
    history_len = actions[d.onset - 1][1]
    if d.cite is not None and (
        isinstance(d.cite, bool) or not isinstance(d.cite, int) or not 1 <= d.cite <= history_len
    ):
        out.append(
            f"cite={d.cite!r} is not a turn before the onset (the onset's history has turns "
            f"1..{history_len})"
        )
    if d.post_act is not None and d.post_act not in ACTS:
        out.append(f"post_act={d.post_act!r} is not one of {', '.join(ACTS)}")
    return out


# ------------------------------------------------------------------------------ rows


@dataclass(frozen=True)
class LabelRow:
    """One decision point's label, as stored in ``data/labels/<source>.jsonl``."""

    id: str
    """Decision point id ``<trajectory id>:<k>``."""
    trajectory_id: str
    """The parent trajectory."""
    proposer: str
    """Who decided (copied from the decision)."""
    confidence: float
    """0..1 (copied from the decision)."""
    act: Act
    """CONTINUE, ASK or STOP."""
    phase: Phase
    """safe, pre, onset or post."""
    onset: int | None
    """The trajectory's onset k, or None when safe."""
    fail: str = NONE
    """Failure mode, or NONE."""
    harm: str = NONE
    """Harm type, or NONE."""
    src: str = NONE
    """Risk source, or NONE."""
    cite: int | None = None
    """Evidence turn number (onset rows only)."""
    scored: bool = True
    """False for post-onset steps: kept for inspection, left out of step metrics."""

    @property
    def k(self) -> int:
        """The decision point's 1-based action index."""
        return int(self.id.rsplit(":", 1)[1])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LabelRow:
        """Inverse of to_dict; DataError on missing or unknown keys."""
        names = set(cls.__dataclass_fields__)
        missing, unknown = names - d.keys(), d.keys() - names
        if missing or unknown:
            raise DataError(
                f"label row {d.get('id')!r}: missing {sorted(missing)} unknown {sorted(unknown)}; "
                "regenerate it with `python bench/label.py`"
            )
        return cls(**d)

    def to_gold(self, reviewed: bool = False) -> GoldLabel:
        """The schema's GoldLabel for this row."""
        return GoldLabel(
            act=self.act,
            phase=self.phase,
            onset=self.onset,
            fail=self.fail,
            harm=self.harm,
            src=self.src,
            cite=self.cite,
            scored=self.scored,
            provenance=self.proposer,
            reviewed=reviewed,
        )


def step_labels(
    traj: Trajectory, decision: TrajectoryDecision, tax: Taxonomy | None = None
) -> list[LabelRow]:
    """One LabelRow per decision point of ``traj`` from a trajectory-level decision.

    Safe (onset None): all CONTINUE, phase safe. Unsafe: CONTINUE before the onset (pre); the
    onset carries act, taxonomy and cite; later steps carry ``post_act`` (default STOP) and the
    taxonomy, phase post, ``scored=False``. Raises DataError when the decision is invalid.
    """
    problems = validate_decision(traj, decision, tax or load_taxonomy())
    if problems:
        raise DataError(f"{traj.id}: invalid decision: " + "; ".join(problems))
    d = decision
    common: dict[str, Any] = {
        "trajectory_id": traj.id,
        "proposer": d.proposer,
        "confidence": d.confidence,
    }
    rows: list[LabelRow] = []
    for k, _ in traj.actions():
        dp = f"{traj.id}:{k}"
        if d.onset is None:
            rows.append(LabelRow(id=dp, act="CONTINUE", phase="safe", onset=None, **common))
        elif k < d.onset:
            rows.append(LabelRow(id=dp, act="CONTINUE", phase="pre", onset=d.onset, **common))
        else:
            at_onset = k == d.onset
            act = d.act if at_onset else (d.post_act or DEFAULT_POST_ACT)
            assert act is not None
            rows.append(
                LabelRow(
                    id=dp,
                    act=act,
                    phase="onset" if at_onset else "post",
                    onset=d.onset,
                    fail=d.fail,
                    harm=d.harm,
                    src=d.src,
                    cite=d.cite if at_onset else None,
                    scored=at_onset,
                    **common,
                )
            )
    return rows


def decisions_from_rows(rows: Iterable[LabelRow]) -> dict[str, TrajectoryDecision]:
    """Recover each trajectory's decision from its rows (inverse of ``step_labels``, except the
    rationale, which rows do not store: the proposer name says which documented rule fired)."""
    by_traj: dict[str, list[LabelRow]] = {}
    for r in rows:
        by_traj.setdefault(r.trajectory_id, []).append(r)
    out: dict[str, TrajectoryDecision] = {}
    for tid, rs in by_traj.items():
        if len({(r.proposer, r.confidence, r.onset) for r in rs}) != 1:
            raise DataError(
                f"{tid}: its label rows disagree on proposer, confidence or onset; regenerate "
                "them with `python bench/label.py`"
            )
        first = rs[0]
        onset_rows = [r for r in rs if r.phase == "onset"]
        post = sorted({r.act for r in rs if r.phase == "post"})
        if first.onset is not None and len(onset_rows) != 1:
            raise DataError(f"{tid}: onset {first.onset} but {len(onset_rows)} onset rows")
        if len(post) > 1:
            raise DataError(f"{tid}: post-onset rows carry several acts {post}")
        o = onset_rows[0] if onset_rows else None
        out[tid] = TrajectoryDecision(
            trajectory_id=tid,
            onset=first.onset,
            act=o.act if o else None,
            fail=o.fail if o else NONE,
            harm=o.harm if o else NONE,
            src=o.src if o else NONE,
            cite=o.cite if o else None,
            post_act=post[0] if post else None,
            proposer=first.proposer,
            confidence=first.confidence,
        )
    return out


def natural_key(s: str) -> tuple[Any, ...]:
    """Sort key that orders ``rjudge:9`` before ``rjudge:10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


def row_key(row: LabelRow) -> tuple[Any, ...]:
    """Deterministic file order: trajectory id (natural order), then k."""
    return (natural_key(row.trajectory_id), row.k)


def write_labels(path: str | Path, rows: Iterable[LabelRow]) -> int:
    """Write rows sorted by ``row_key`` (atomic); returns the count."""
    return write_jsonl(path, (r.to_dict() for r in sorted(rows, key=row_key)))


def load_labels(path: str | Path) -> list[LabelRow]:
    """Read a label file; DataError naming the file when it is missing or malformed."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"label file {p} not found: run `python bench/label.py` first")
    try:
        return [LabelRow.from_dict(d) for d in read_jsonl(p)]
    except (ValueError, TypeError) as e:
        raise DataError(f"{p}: {e}; regenerate it with `python bench/label.py`") from e


def load_proposals(labels_dir: str | Path) -> dict[str, TrajectoryDecision]:
    """Every trajectory's proposal from every ``<source>.jsonl`` under ``labels_dir``."""
    d = Path(labels_dir)
    out: dict[str, TrajectoryDecision] = {}
    for f in sorted(d.glob("*.jsonl")):
        out.update(decisions_from_rows(load_labels(f)))
    return out


__all__ = [
    "ACTS",
    "NONE",
    "LabelRow",
    "Taxonomy",
    "TrajectoryDecision",
    "decision_hash",
    "decisions_from_rows",
    "load_labels",
    "load_proposals",
    "load_taxonomy",
    "step_labels",
    "validate_decision",
    "write_labels",
]
