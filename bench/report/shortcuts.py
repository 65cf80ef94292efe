"""Shortcut probes as reference lines, and every judge's margin over them.

A probe (a ``judges.toml`` row with ``role = "probe"``) sees one artefact of a decision point
only: the called tool's name, the step's position, the thought, the action text. It is fitted on
dev like the learned baselines and never ranked. For every headline source and every metric in
``SHORTCUT_METRICS`` the *reference* is the probe with the best point estimate on that source (ties
by id); the headline reference is the mean over the headline sources of those per-source bests,
so a judge is compared with the strongest single-artefact rule wherever that rule happens to
work. A judge's *margin* is its figure minus the reference, with the paired bootstrap interval
(the judge and the chosen probes on the same trajectory draws); ``verdict`` says whether the
interval lies above 0 (``above``), below it (``below``) or straddles it (``tied``). A judge that
is not above the shortcuts is not shown to measure judgment.

Choosing the best probe on test makes the reference a little optimistic (the maximum of noisy
estimates), which only makes the margin harder to win.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.metrics.bootstrap import Bootstrap, percentile_interval
from bench.metrics.spec import SHORTCUT_METRICS
from bench.report.scoring import Headline, rnd


@dataclass(frozen=True)
class Reference:
    """The shortcut reference of one metric: the best probe per source and their mean."""

    metric: str
    """The metric."""
    best: Mapping[str, str]
    """Source -> the probe with the best point estimate there."""
    per_source: Mapping[str, float]
    """Source -> that probe's point estimate."""
    value: float
    """Mean over the headline sources of ``per_source``."""
    samples: np.ndarray
    """(resamples,) the same mean on every bootstrap draw (the chosen probes fixed)."""
    source_samples: Mapping[str, np.ndarray]
    """Source -> the chosen probe's bootstrap samples there."""


def references(h: Headline, probes: Sequence[str]) -> dict[str, Reference]:
    """Metric -> reference line, for every SHORTCUT_METRICS metric; {} without probes."""
    if not probes:
        return {}
    out: dict[str, Reference] = {}
    for m in SHORTCUT_METRICS:
        best: dict[str, str] = {}
        per: dict[str, float] = {}
        samples: dict[str, np.ndarray] = {}
        for s in h.per_source:
            vals = {p: h.per_source_point[s][p][m] for p in probes}
            ranked = sorted(
                vals, key=lambda p: (np.isnan(vals[p]), -np.nan_to_num(vals[p], nan=0.0), p)
            )
            best[s] = ranked[0]
            per[s] = vals[ranked[0]]
            samples[s] = h.per_source[s].samples[ranked[0]][m]
        value = float(np.mean([per[s] for s in h.sources]))
        stack = np.mean(np.stack([samples[s] for s in h.sources]), axis=0)
        out[m] = Reference(m, best, per, value, stack, samples)
    return out


def _cell(diff: float, samples: np.ndarray, confidence: float) -> dict[str, Any]:
    lo, hi = percentile_interval(samples, (1 - confidence) / 2)
    if np.isnan(diff):
        verdict = None
    elif lo > 0:
        verdict = "above"
    elif hi < 0:
        verdict = "below"
    else:
        verdict = "tied"
    return {"value": rnd(diff), "ci": [rnd(lo), rnd(hi)], "verdict": verdict}


def margins(
    h: Headline, refs: Mapping[str, Reference], judge: str, confidence: float = 0.95
) -> dict[str, Any]:
    """A judge's margin over the headline reference of every SHORTCUT_METRICS metric."""
    out: dict[str, Any] = {}
    for m, ref in refs.items():
        diff = h.point[judge][m] - ref.value
        out[m] = _cell(diff, h.boot.samples[judge][m] - ref.samples, confidence)
    return out


def source_margins(
    h: Headline, refs: Mapping[str, Reference], source: str, judge: str, confidence: float = 0.95
) -> dict[str, Any]:
    """A judge's margin over the best probe on one source, every SHORTCUT_METRICS metric."""
    out: dict[str, Any] = {}
    for m, ref in refs.items():
        diff = h.per_source_point[source][judge][m] - ref.per_source[source]
        d = h.per_source[source].samples[judge][m] - ref.source_samples[source]
        out[m] = _cell(diff, d, confidence)
    return out


def reference_json(refs: Mapping[str, Reference], boot: Bootstrap) -> dict[str, Any]:
    """The reference lines as the report carries them."""
    out: dict[str, Any] = {}
    for m, ref in refs.items():
        lo, hi = percentile_interval(ref.samples, (1 - boot.confidence) / 2)
        out[m] = {
            "value": rnd(ref.value),
            "ci": [rnd(lo), rnd(hi)],
            "best_probe": dict(sorted(ref.best.items())),
            "per_source": {s: rnd(v) for s, v in sorted(ref.per_source.items())},
        }
    return out
