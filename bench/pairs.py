"""``python bench/pairs.py``: validate, show and count the contrast pairs (docs/pairs.md).

- ``check [PATH ...]``: validate pair files (default: every file under ``data/pairs``); prints
  every problem as ``file: field: message`` and exits 1 when there is any.
- ``show ID --side A|B``: one side of a pair as a judge sees it before the judged action runs
  (policy, earlier turns with their results, the judged action), without labels: what a blind
  verifier reads.
- ``stats``: coverage per domain, clue kind, distance bucket, polarity, act, harm and failure mode,
  and the verification status (kept, pending, dropped).
- ``assign --reviewers R1,R2,... --out DIR``: blind verification packets for every pair still
  pending: ``DIR/<reviewer>/items.md`` (one side per item under an opaque item id, never both sides
  of a pair, never the reviewer's own pairs), an empty ``answers.jsonl`` to fill with
  ``{"item", "act", "note"}`` lines, and the maintainer's ``DIR/key.jsonl``.
- ``collect --key DIR/key.jsonl ANSWERS ...``: turn filled ``answers.jsonl`` files into
  verification rows (``data/pairs/verification/<reviewer>.jsonl``).
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:  # python bench/pairs.py
    import cli

    raise SystemExit(cli.launch(__file__))

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.core.errors import DataError
from bench.core.jsonl import read_jsonl, write_jsonl
from bench.core.labels import ACTS
from bench.core.schema import Trajectory, decision_points
from bench.labelling.pair_review import summarise
from bench.sources.pair_files import PAIRS_DIR, load_all
from bench.sources.pair_verification import (
    VERIFICATION_DIR,
    assign,
    keep_status,
    load_verifications,
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench pairs", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="validate pair files")
    c.add_argument("paths", nargs="*", type=Path, help="files or folders (default: data/pairs)")
    s = sub.add_parser("show", help="one side as a judge sees it")
    s.add_argument("id", help="pair id (the file name without .yaml)")
    s.add_argument("--side", required=True, choices=("A", "B", "a", "b"))
    s.add_argument("--root", type=Path, default=PAIRS_DIR, help="pairs folder")
    t = sub.add_parser("stats", help="coverage and verification status")
    t.add_argument("--root", type=Path, default=PAIRS_DIR, help="pairs folder")
    a = sub.add_parser("assign", help="blind verification packets for the pending pairs")
    a.add_argument("--reviewers", required=True, help="comma-separated reviewer names")
    a.add_argument("--out", type=Path, required=True, help="packet folder (keep key.jsonl)")
    a.add_argument("--root", type=Path, default=PAIRS_DIR, help="pairs folder")
    a.add_argument("--round", type=int, default=1, help="verification round of these answers")
    a.add_argument("--only", metavar="PREFIX", default="", help="only pairs whose id starts with one of these comma-separated prefixes")
    c2 = sub.add_parser("collect", help="answers -> data/pairs/verification rows")
    c2.add_argument("answers", nargs="+", type=Path, help="filled answers.jsonl files")
    c2.add_argument("--key", type=Path, required=True, help="the key.jsonl that assign wrote")
    c2.add_argument("--root", type=Path, default=PAIRS_DIR, help="pairs folder")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; 0 when all is well, 1 when a check found problems."""
    args = _parser().parse_args(argv)
    if args.cmd == "check":
        return _check(args.paths or [PAIRS_DIR])
    if args.cmd == "show":
        return _show(args.id, args.side.upper(), args.root)
    if args.cmd == "assign":
        return _assign(args.reviewers.split(","), args.out, args.root, args.round, args.only)
    if args.cmd == "collect":
        return _collect(args.answers, args.key, args.root)
    return _stats(args.root)


def _check(paths: list[Path]) -> int:
    n_files = n_bad = 0
    for root in paths:
        if not root.exists():
            raise DataError(f"{root} does not exist: pass pair files or folders")
        loaded, rejects = load_all(root)
        n_files += len(loaded)
        for r in rejects:
            n_bad += 1
            for part in r.reason.split(" | "):
                print(f"{root / r.file if root.is_dir() else r.file}: {part}")
    print(f"checked {n_files} pair file(s): {n_files - n_bad} valid, {n_bad} with problems")
    return 1 if n_bad else 0


def _find(pair_id: str, root: Path) -> list[dict[str, Any]]:
    matches = sorted(root.rglob(f"{pair_id}.yaml"))
    if not matches:
        raise DataError(f"no pair file {pair_id}.yaml under {root}")
    loaded, _ = load_all(matches[0])
    if not loaded or not loaded[0].records:
        problems = "; ".join(str(p) for p in loaded[0].problems) if loaded else ""
        raise DataError(f"{matches[0]} is not valid: {problems}; run `bench pairs check` on it")
    return loaded[0].records


def side_view(rec: dict[str, Any]) -> str:
    """One side of a pair as a judge sees it before the judged action runs: the policy, every
    earlier turn with its result, and the judged action with its thought; no labels, no ids."""
    traj = Trajectory.from_dict(rec)
    k = rec["metadata"]["pair"]["k"]
    dp = next(d for d in decision_points(traj) if d.k == k)
    out = [f"Judge the action marked >>> (the agent's action {k}).", "POLICY"]
    out.append(f"  system: {dp.policy.system}")
    if dp.policy.task:
        out.append(f"  task: {dp.policy.task}")
    out += [f"  constraint: {c}" for c in dp.policy.constraints]
    for n, t in enumerate(dp.history, 1):
        if t.role != "agent":
            out.append(f"[{n}] {t.role.upper()}: {t.content}")
            continue
        assert t.action is not None
        out.append(f"[{n}] AGENT thought: {t.thought or ''}")
        out.append(f"     action: {t.action.text}")
        out.append(f"     result: {t.observation}")
    out.append(f">>> AGENT thought: {dp.thought or ''}")
    out.append(f">>> action: {dp.action.text}")
    return "\n".join(out) + "\n"


def _show(pair_id: str, side: str, root: Path) -> int:
    rec = next(r for r in _find(pair_id, root) if r["metadata"]["pair"]["side"] == side)
    sys.stdout.write(f"=== {pair_id} side {side}\n" + side_view(rec))
    return 0


def _assign(reviewers: list[str], out: Path, root: Path, round_: int, only: str = "") -> int:
    loaded, _ = load_all(root)
    verdicts = load_verifications(root / VERIFICATION_DIR)
    records = {r["id"]: r for x in loaded for r in x.records}
    pending = {
        x.records[0]["metadata"]["pair"]["id"]: x.records[0]["metadata"]["pair"]["author"]
        for x in loaded
        if x.records
        and x.records[0]["metadata"]["pair"]["id"].startswith(tuple(only.split(",")))
        and keep_status(
            x.records[0]["metadata"]["pair"]["id"],
            x.records[0]["metadata"]["pair"]["author"],
            verdicts,
        ).reason.startswith("pending")
    }
    try:
        items = assign(pending, reviewers, verdicts)
    except ValueError as e:
        raise DataError(str(e)) from e
    out.mkdir(parents=True, exist_ok=True)
    key = [
        {"item": a.item, "reviewer": a.reviewer, "trajectory_id": a.trajectory_id, "round": round_}
        for a in items
    ]
    write_jsonl(out / "key.jsonl", key)
    for who in reviewers:
        mine = [a for a in items if a.reviewer == who]
        folder = out / who
        folder.mkdir(exist_ok=True)
        text = [f"# Blind verification packet for {who}: {len(mine)} items\n"]
        for a in mine:
            text.append(f"\n## item {a.item}\n\n" + side_view(records[a.trajectory_id]))
        (folder / "items.md").write_text("".join(text), encoding="utf-8")
        (folder / "answers.jsonl").touch()
        print(f"{who}: {len(mine)} items -> {folder / 'items.md'}")
    print(f"{len(pending)} pending pair(s), {len(items)} item(s); key: {out / 'key.jsonl'}")
    return 0


def _collect(answers: list[Path], key_file: Path, root: Path) -> int:
    key = {r["item"]: r for r in read_jsonl(key_file)}
    rows: dict[str, list[dict[str, Any]]] = {}
    for f in answers:
        for n, a in enumerate(read_jsonl(f), 1):
            entry = key.get(str(a.get("item")))
            if entry is None:
                raise DataError(f"{f}:{n}: item {a.get('item')!r} is not in {key_file}")
            if a.get("act") not in ACTS:
                raise DataError(f"{f}:{n}: act {a.get('act')!r} must be one of {', '.join(ACTS)}")
            rows.setdefault(entry["reviewer"], []).append(
                {
                    "trajectory_id": entry["trajectory_id"],
                    "reviewer": entry["reviewer"],
                    "act": a["act"],
                    "note": str(a.get("note", "")),
                    "round": entry["round"],
                }
            )
    folder = root / VERIFICATION_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for who, rs in sorted(rows.items()):
        existing = (
            list(read_jsonl(folder / f"{who}.jsonl")) if (folder / f"{who}.jsonl").exists() else []
        )
        done = {(r["trajectory_id"], r["round"]) for r in existing}
        new = [r for r in rs if (r["trajectory_id"], r["round"]) not in done]
        write_jsonl(folder / f"{who}.jsonl", [*existing, *new])
        print(f"{who}: {len(new)} new verification row(s)")
    return 0


def _stats(root: Path) -> int:
    loaded, rejects = load_all(root)
    verdicts = load_verifications(root / VERIFICATION_DIR)
    pairs = [x.records for x in loaded if x.records]
    tallies: dict[str, Counter[str]] = {
        k: Counter() for k in ("domain", "clue_kind", "bucket", "polarity", "act", "harm", "fail")
    }
    for a, _b in pairs:
        meta = a["metadata"]["pair"]
        for key, value in (
            ("domain", a["category"]),
            ("clue_kind", meta["clue_kind"]),
            ("bucket", meta["bucket"]),
            ("polarity", meta["polarity"]),
            ("act", meta["act"]),
            ("harm", a["metadata"]["gold"]["harm"]),
            ("fail", a["metadata"]["gold"]["fail"]),
        ):
            tallies[key][value] += 1
    summary = summarise([a["metadata"]["pair"] for a, _ in pairs], verdicts)
    print(
        f"pairs: {len(pairs)} valid, {len(rejects)} rejected; kept {summary.kept}, "
        f"dropped {len(summary.dropped)}, pending {summary.pending}"
    )
    for name, c in tallies.items():
        print(f"{name:<10} " + json.dumps(dict(sorted(c.items())), ensure_ascii=False))
    v = summary.as_dict()
    print("verification " + json.dumps({k: v[k] for k in v if k != "drop_reasons"}))
    for d in summary.dropped:
        print(f"  dropped {d.pair} ({d.clue_kind}): {d.reason}")
    return 0
