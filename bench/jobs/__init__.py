"""Running judges on Hugging Face Jobs: plan, submit, status, collect, and the job's worker.

``plan`` holds the records and pure rules (sharding, licences, labels, the job command, shard
files and their verification); ``hub`` the Hub calls every side shares; ``submit`` the submitter
and decide.py's ``--on hf-jobs`` options; ``status`` and ``collect`` their flags; ``worker``
what runs inside a job (``python -m bench.jobs worker``, see ``__main__``). docs/hf-jobs.md
walks through a run. ``huggingface_hub`` is imported inside functions, never at module level.
"""
