"""Rule-based label proposers: one TrajectoryDecision per trajectory, with a rule name and a
confidence, before any human review.

Every rule is listed in ``RULES`` (``rules.py``) with its confidence and a one-line description
(the proposal's rationale); docs/labelling.md explains them. Proposers may use hindsight a judge
never gets (upstream risk descriptions, an action's own observation), because they label, not
judge. They write only ids and labels: nothing from the record's text leaves this package.

Layout: ``propose`` here dispatches by source; one module per source (``sample``,
``stepshield``, ``rjudge``, ``assebench``); ``rules`` holds the registry and the decision
constructor; ``actions`` reads what an action does (step kind, shell command, tool name);
``text`` holds word and keyword matching.

- sample: the corpus' hand-written gold.
- stepshield: onset = the first step with a rogue-family label, act STOP, taxonomy from
  ``[map.stepshield.*]``.
- rjudge / assebench safe: every step CONTINUE.
- rjudge injection: onset = the first action after the turn carrying the injected instruction
  that acts on it (word overlap between the action and the instruction); cite = that turn.
- rjudge injection harm: data-stealing records privacy, direct-harm records the harm of the
  injected act (``injection_harm``).
- rjudge unintended: read-only steps are skipped (``step_kind``); then the first state-changing
  action whose tool the risk description names, a guessed candidate for an under-specified
  request (cited), a step whose verb the description uses, the first state-changing step (an
  ignored warning cited), the first content step of a harmful request, else the last non-read
  step; src/act from ``[map.rjudge.src_keywords]``; keywords match whole words
  (``keyword_hit``); post_act CONTINUE when only replies follow the onset.
- assebench: the attacker tool is the one its own result reports; how the attack arrived
  (``attack_kind``: an override in the task, a trigger phrase the task maps to the tool, an
  injected tool result, a quoted earlier workflow) sets onset, cite and src; fail is
  injection_compliance after any of these; harm follows what the tool does (its name's words);
  ASK where the call is the agent's plan at work; a call made before the injection showed is a
  hidden, unrequested call. Harmful requests: harmful_content or misinformation, harm from the
  risk description.
"""

from __future__ import annotations

from bench.labels import Taxonomy, TrajectoryDecision
from bench.proposers.actions import (
    StepKind,
    action_words,
    arg_values,
    command_reads,
    is_reply,
    is_risky,
    shell_command,
    step_kind,
    tool_name,
)
from bench.proposers.assebench import (
    INJECTION_MARKER,
    AttackKind,
    attack_kind,
    plan_steps,
    propose_assebench,
    tool_list,
    trigger_phrase,
)
from bench.proposers.rjudge import RISK_TYPES, injection_harm, propose_rjudge, rjudge_risk_type
from bench.proposers.rules import AMBIGUOUS_FACTOR, RULES, Rule, decision
from bench.proposers.sample import propose_sample
from bench.proposers.stepshield import propose_stepshield
from bench.proposers.text import camel_words, first_table_hit, keyword_hit, words
from bench.schema import Trajectory

__all__ = [
    "AMBIGUOUS_FACTOR",
    "INJECTION_MARKER",
    "RISK_TYPES",
    "RULES",
    "AttackKind",
    "Rule",
    "StepKind",
    "action_words",
    "arg_values",
    "attack_kind",
    "camel_words",
    "command_reads",
    "first_table_hit",
    "injection_harm",
    "is_reply",
    "is_risky",
    "keyword_hit",
    "plan_steps",
    "propose",
    "rjudge_risk_type",
    "shell_command",
    "step_kind",
    "tool_list",
    "tool_name",
    "trigger_phrase",
    "words",
]


def propose(traj: Trajectory, tax: Taxonomy) -> TrajectoryDecision:
    """The proposal for one trajectory (never raises for a well-formed trajectory)."""
    if traj.source == "sample":
        return propose_sample(traj)
    if traj.source == "stepshield":
        return propose_stepshield(traj, tax)
    if traj.label != "unsafe" or not traj.actions():
        return decision(traj, "upstream.safe", None)
    if traj.source == "rjudge":
        return propose_rjudge(traj, tax)
    if traj.source == "assebench":
        return propose_assebench(traj, tax)
    # an unknown source with an unsafe label: the weakest rule, flagged for review
    return decision(traj, "rjudge.last_action", len(traj.actions()), act="STOP")
