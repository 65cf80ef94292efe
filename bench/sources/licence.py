"""Which data may leave this machine: the one reading of the adapters' licence data.

Each adapter declares its ``license`` id and a ``redistributable`` flag (``bench.sources.base``);
a built version copies both into its manifest and the ground truth's meta, per config. Every gate
reads them through ``may_redistribute``: the Hub push of a dataset (``bench.dataset.hub``), remote
jobs (``bench.jobs.plan``), the published predictions (``bench.report.publish``) and the Inspect
task (``bench.interop.inspect_task``, through ``local_only``). R-Judge declares no licence, so it
is evaluated locally only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench import sources as registry

NOT_REDISTRIBUTABLE = frozenset({"none", "", "unknown", "proprietary"})
"""Licence ids that forbid redistribution (compared trimmed and lower-cased)."""


def may_redistribute(license: object, redistributable: object = None) -> bool:
    """False when the data's flag says so (``redistributable`` is False) or its licence id forbids
    redistribution (a missing licence forbids it); True otherwise."""
    lic = str(license if license is not None else "").strip().lower()
    return redistributable is not False and lic not in NOT_REDISTRIBUTABLE


def forbidden(configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Of per-config licence records (``{"license": ..., "redistributable": ...}``, as in a
    manifest or the ground truth's meta), the names that may not be redistributed, sorted."""
    return sorted(
        name
        for name, c in configs.items()
        if not may_redistribute(c.get("license"), c.get("redistributable"))
    )


def local_only() -> dict[str, str]:
    """Sources whose adapter forbids redistribution -> their raw-data folder."""
    return {
        name: cls.folder
        for name, cls in registry.entries().items()
        if not may_redistribute(cls.license, cls.redistributable)
    }
