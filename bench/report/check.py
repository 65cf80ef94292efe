"""``leaderboard.py --check``: are the committed outputs what the inputs produce?

Regeneration is byte-identical on one machine, but a float sum can differ in its last bit from
one CPU to the next (BLAS picks its summation order by CPU), and a value at a rounding boundary
then prints one unit apart (an ECE of 0.2162 on one machine, 0.2163 on another). So the check
compares text outputs token by token: everything that is not a decimal number must match exactly,
integers included (a count never drifts), and each decimal number may differ from the committed
one by at most one unit in its last printed digit. A PNG must carry the same data digest, or
else its embedded data must match by the same rule. The largest difference found is reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from bench.report import plots
from bench.report.tables import OUTPUT_TEXTS

_DECIMAL = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class NumericDiff:
    """How two texts differ once decimal numbers are allowed one unit of their last digit."""

    same: bool
    """True when they match within the tolerance."""
    largest: float
    """The largest absolute difference between paired decimal numbers (0 when identical)."""
    where: str
    """The pair with the largest difference, or why the texts do not match."""


def _unit(token: str) -> float:
    mantissa, _, exp = token.lower().partition("e")
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 10.0 ** (-decimals + (int(exp) if exp else 0))


def numeric_diff(fresh: str, committed: str) -> NumericDiff:
    """Compare two texts: identical skeletons (everything but decimal numbers), and each pair
    of decimal numbers within one unit of the committed number's last printed digit (or the
    fresh one's, when it printed fewer digits)."""
    if fresh == committed:
        return NumericDiff(True, 0.0, "")
    a_nums, b_nums = _DECIMAL.findall(fresh), _DECIMAL.findall(committed)
    if _DECIMAL.sub("#", fresh) != _DECIMAL.sub("#", committed) or len(a_nums) != len(b_nums):
        return NumericDiff(False, float("inf"), "text other than decimal numbers differs")
    largest, where = 0.0, ""
    for x, y in zip(a_nums, b_nums, strict=True):
        if x == y:
            continue
        d = abs(float(x) - float(y))
        unit = max(_unit(x), _unit(y))
        if d > unit * (1 + 1e-9):
            return NumericDiff(False, d, f"{y} became {x} (more than one unit, {unit:g})")
        if d > largest:
            largest, where = d, f"{y} vs {x}"
    return NumericDiff(True, largest, where)


def compare(fresh: Path, committed: Path) -> tuple[list[str], NumericDiff]:
    """(differences between freshly rendered outputs and the committed ones, the largest
    tolerated numeric difference). See the module docstring for the rule."""
    diffs: list[str] = []
    worst = NumericDiff(True, 0.0, "")
    for name in OUTPUT_TEXTS:
        a, b = fresh / name, committed / name
        if not b.is_file():
            diffs.append(f"{b} is missing")
            continue
        nd = numeric_diff(a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8"))
        if not nd.same:
            diffs.append(f"{b} differs from what the inputs produce: {nd.where}")
        elif nd.largest > worst.largest:
            worst = NumericDiff(True, nd.largest, f"{name}: {nd.where}")
    new_pngs = {p.name for p in (fresh / "plots").glob("*.png")}
    old_dir = committed / "plots"
    old_pngs = {p.name for p in old_dir.glob("*.png")} if old_dir.is_dir() else set()
    for name in sorted(new_pngs | old_pngs):
        if name not in old_pngs:
            diffs.append(f"{old_dir / name} is missing")
            continue
        if name not in new_pngs:
            diffs.append(f"{old_dir / name} is not produced any more: delete it")
            continue
        a, b = fresh / "plots" / name, old_dir / name
        if plots.digest_of(a) == plots.digest_of(b):
            continue
        da, db = plots.data_of(a), plots.data_of(b)
        if da is None or db is None:
            diffs.append(f"{b} plots other data")
            continue
        nd = numeric_diff(json.dumps(da), json.dumps(db))
        if not nd.same:
            diffs.append(f"{b} plots other data")
        elif nd.largest > worst.largest:
            worst = NumericDiff(True, nd.largest, f"plots/{name}: {nd.where}")
    return diffs, worst
