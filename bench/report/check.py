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

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from bench.metrics.paired import content_digest
from bench.report import plots
from bench.report.tables import MANIFEST_KEY, OUTPUT_BINARIES, OUTPUT_TEXTS

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


def without_digests(leaderboard_json: str) -> str:
    """leaderboard.json's text with the digests of its ``files`` manifest blanked (the paths
    kept), for comparisons that must not depend on the bytes of other files."""
    head, sep, tail = leaderboard_json.partition(f'\n "{MANIFEST_KEY}": {{')
    return head + sep + re.sub(r'": "[0-9a-f]{64}"', '": "#"', tail)


def manifest_problems(folder: Path) -> list[str]:
    """What is wrong with the manifest of ``folder``/leaderboard.json: a file it names that is
    missing or whose sha256 is not the one named ([] when the folder is one generation)."""
    doc = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    out = []
    files = doc.get(MANIFEST_KEY)
    if not isinstance(files, dict):
        return [f"{folder / 'leaderboard.json'} has no '{MANIFEST_KEY}' manifest"]
    for rel, digest in files.items():
        p = folder / rel
        if not p.is_file():
            out.append(f"{p} is named by leaderboard.json but missing")
        elif hashlib.sha256(p.read_bytes()).hexdigest() != digest:
            out.append(f"{p} is not the file leaderboard.json names (sha256 differs)")
    return out


def _text_diff(name: str, a: Path, b: Path) -> tuple[str | None, NumericDiff]:
    """(a difference to report or None, the numeric comparison) of one text output."""
    if not a.is_file() and not b.is_file():
        return None, NumericDiff(True, 0.0, "")
    if not b.is_file():
        return f"{b} is missing", NumericDiff(False, 0.0, "")
    if not a.is_file():
        return f"{b} is not produced any more: delete it", NumericDiff(False, 0.0, "")
    x, y = a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8")
    if name == "leaderboard.json":
        x, y = without_digests(x), without_digests(y)
    nd = numeric_diff(x, y)
    return (None if nd.same else f"{b} differs from what the inputs produce: {nd.where}"), nd


def _binary_diffs(fresh: Path, committed: Path) -> list[str]:
    """The binary outputs (paired statistics) that do not hold what the inputs give: compared
    by content digest, since another zlib may compress the same arrays to other bytes."""
    out = []
    for name in OUTPUT_BINARIES:
        a, b = fresh / name, committed / name
        if not b.is_file():
            out.append(f"{b} is missing")
        elif content_digest(a.read_bytes()) != content_digest(b.read_bytes()):
            out.append(f"{b} holds other statistics than the inputs give")
    return out


def compare(fresh: Path, committed: Path) -> tuple[list[str], NumericDiff]:
    """(differences between freshly rendered outputs and the committed ones, the largest
    tolerated numeric difference). See the module docstring for the rule."""
    diffs: list[str] = []
    worst = NumericDiff(True, 0.0, "")
    for name in OUTPUT_TEXTS:
        problem, nd = _text_diff(name, fresh / name, committed / name)
        if problem:
            diffs.append(problem)
        elif nd.largest > worst.largest:
            worst = NumericDiff(True, nd.largest, f"{name}: {nd.where}")
    diffs += _binary_diffs(fresh, committed)
    if (committed / "leaderboard.json").is_file() and not diffs:
        diffs += manifest_problems(committed)
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
