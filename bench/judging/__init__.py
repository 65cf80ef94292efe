"""Running judges: judges.toml rows, the backend protocol and registry, the runner, local
evaluation and the predictions files.

``specs`` validates judges.toml into frozen ``JudgeSpec`` rows; ``protocol`` is the interface a
backend implements (one batch or one async method) and the records that cross it; ``backends``
holds one module per backend, each registered with one decorator; ``runner`` owns batching,
concurrency, retries, timing and warm-up (never the backend); ``local`` evaluates judges over a
built dataset here, resuming their ``predictions`` files. ``bench.jobs`` runs the same
``local.run_judge`` inside Hugging Face Jobs.
"""
