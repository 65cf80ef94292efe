"""Ids and their order: ``<source>:<source_id>`` for a trajectory, ``<trajectory id>:<k>`` for
one of its decision points, and the one sort key every file and table uses."""

from __future__ import annotations

import re
from typing import Any

_DIGITS = re.compile(r"(\d+)")


def natural_key(s: Any) -> tuple[tuple[int, int, str], ...]:
    """Sort key that orders ``rjudge:2`` before ``rjudge:10``, for any id.

    The id is cut into runs of digits and runs of other characters; digit runs compare by value
    (then by spelling, so ``01`` and ``1`` still have an order) and sort before text runs at the
    same position. Every element has the same shape, so two keys always compare: mixed ids
    (``sample:a`` beside ``sample:7``) never raise TypeError."""
    parts = _DIGITS.split(str(s))
    return tuple((0, int(p), p) if i % 2 else (1, 0, p) for i, p in enumerate(parts) if p)


def source_of(trajectory_or_point_id: str) -> str:
    """The source part of a trajectory or decision point id."""
    return trajectory_or_point_id.split(":", 1)[0]


def point_id(trajectory_id: str, k: int) -> str:
    """The id of action k (1-based) of a trajectory."""
    return f"{trajectory_id}:{k}"


def k_of(point_id_: str) -> int:
    """The 1-based action index of a decision point id."""
    return int(point_id_.rsplit(":", 1)[1])
