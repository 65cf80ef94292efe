"""The build's leakage report: what a judge tuned on dev could carry over to test, per source.

For each source: exact task texts (policy task and constraints) found in both splits and the
test trajectories whose exact task is in dev; for every link kind of ``bench.dataset.splits``
(twin pair, task, attacker tool, attacker template, user template), the link values found in
both splits; and the test trajectories whose nearest dev trajectory has a TF-IDF cosine above
``NEAR_DUPLICATE`` (word uni- and bigrams over the whole visible text: policy, every turn and its
observation). The report is printed by the build and written into the dataset card; a hard link
that crosses the split stops the build (``bench.dataset.splits.crossing_links``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bench.core.jsonl import content_hash
from bench.core.schema import Split, Trajectory
from bench.dataset.splits import links

NEAR_DUPLICATE = 0.9
"""TF-IDF cosine above which a test trajectory counts as a near duplicate of a dev one."""


@dataclass(frozen=True)
class SourceLeakage:
    """Leakage figures of one source."""

    source: str
    """The source."""
    test_trajectories: int
    """Trajectories in test."""
    tasks_shared: int
    """Distinct exact task texts that occur in both dev and test."""
    test_with_dev_task: int
    """Test trajectories whose exact task text occurs in dev."""
    links_shared: Mapping[str, int] = field(default_factory=dict)
    """Link kind -> link values found in both splits (0 for every hard link after a build)."""
    near_duplicates: int = 0
    """Test trajectories whose nearest dev trajectory has TF-IDF cosine > NEAR_DUPLICATE."""

    def line(self) -> str:
        """One printed line."""
        shared = ", ".join(f"{k} {v}" for k, v in sorted(self.links_shared.items()))
        return (
            f"{self.source:<11} tasks in both splits {self.tasks_shared} (test trajectories with "
            f"a dev task {self.test_with_dev_task}/{self.test_trajectories}); links in both "
            f"splits: {shared or 'none'}; near duplicates (cosine > {NEAR_DUPLICATE}) "
            f"{self.near_duplicates}/{self.test_trajectories}"
        )


def task_key(t: Trajectory) -> str:
    """The exact task a trajectory works on (policy task and constraints), hashed."""
    return content_hash([t.policy.task, list(t.policy.constraints)], 16)


def trajectory_text(t: Trajectory) -> str:
    """Everything visible in a trajectory, for near-duplicate detection."""
    parts = [t.policy.text()]
    for turn in t.turns:
        parts += [turn.content or "", turn.thought or "", turn.observation or ""]
        parts.append(turn.action.text if turn.action else "")
    return "\n".join(p for p in parts if p)


def near_duplicates(
    dev: Sequence[Trajectory], test: Sequence[Trajectory], threshold: float = NEAR_DUPLICATE
) -> int:
    """Test trajectories whose nearest dev trajectory has TF-IDF cosine above ``threshold``."""
    if not dev or not test:
        return 0
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    vec.fit([trajectory_text(t) for t in (*dev, *test)])
    d = vec.transform([trajectory_text(t) for t in dev])
    x = vec.transform([trajectory_text(t) for t in test])
    nearest = (x @ d.T).max(axis=1).toarray().ravel()
    # a hair below the threshold, so a cosine of exactly 0.9 is not a near duplicate on one
    # machine and one on another
    return int((nearest > threshold + 1e-9).sum())


def report(
    trajectories: Sequence[Trajectory], assignment: Mapping[str, Split]
) -> list[SourceLeakage]:
    """The leakage figures of every source, sorted by source."""
    by_source: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        by_source[t.source].append(t)
    out = []
    for source, trajs in sorted(by_source.items()):
        dev = [t for t in trajs if assignment[t.id] == "dev"]
        test = [t for t in trajs if assignment[t.id] == "test"]
        dev_tasks = {task_key(t) for t in dev}
        test_tasks = {task_key(t) for t in test}
        values: dict[tuple[str, str], set[str]] = defaultdict(set)
        for t in trajs:
            for link in links(t):
                values[(link.kind, link.value)].add(assignment[t.id])
        kinds = sorted({k for k, _ in values})
        shared = {
            k: sum(1 for (kk, _), s in values.items() if kk == k and len(s) > 1) for k in kinds
        }
        out.append(
            SourceLeakage(
                source=source,
                test_trajectories=len(test),
                tasks_shared=len(dev_tasks & test_tasks),
                test_with_dev_task=sum(task_key(t) in dev_tasks for t in test),
                links_shared=shared,
                near_duplicates=near_duplicates(dev, test),
            )
        )
    return out
