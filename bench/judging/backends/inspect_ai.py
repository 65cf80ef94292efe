"""The ``inspect`` backend: a judge whose predictions come from an Inspect AI eval log.

Such a row documents a judge run with Inspect's own providers (``inspect eval
bench/interop/inspect_task.py --model ...``, docs/inspect.md): ``model`` is Inspect's model name,
``prompt`` the task's template and ``parser`` the template's parser. ``decide.py`` never runs it:
it is skipped with the import command as the reason, or reported cached once
``python bench/inspect_import.py LOG --judge ID`` has written its predictions file (the import
uses the row's config hash). ``params.generate`` holds the Inspect generation settings the
log was made with (``temperature``, ``max_tokens``, ...: the ones set, as the log records them);
the import checks a row's against the log's, so two settings never share a predictions file.
"""

from __future__ import annotations

from typing import NoReturn

from bench.judging.backends import backend
from bench.judging.protocol import JudgeSpec, SkipJudge


@backend("inspect", params={"generate": dict})
def make(judge: JudgeSpec) -> NoReturn:
    """Always skipped: the predictions are imported, not made here."""
    raise SkipJudge(
        f"{judge.id}'s predictions come from an Inspect AI log: run `inspect eval "
        f"bench/interop/inspect_task.py --model {judge.model or '<model>'} -T template="
        f"{judge.prompt or 'auditor'}`, then `python bench/inspect_import.py LOG --judge {judge.id}`"
    )
