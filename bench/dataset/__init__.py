"""The frozen, versioned dataset: checks, splits, files, card, Hub upload, and reading it back.

``builder.build`` runs the whole build: gold labels (``bench.labelling.gold``) are checked
(``checks``: ids line up, values in vocabulary, one onset per unsafe trajectory, no view leaks
its own result, the judged action verbatim in every template's prompt), split (``splits``:
grouped, stratified, seeded), and written, one job per module: ``records`` (the typed records and
``Built``), ``features`` (parquet columns), ``version`` (the version folder, atomically),
``card_stats`` and ``card`` (the dataset card), ``ground_truth`` (the leaderboard's ids and
labels), ``sft`` (the training export). The version is a hash of the canonical content.
``hub`` publishes a version behind the licence gate; ``reader`` is the runner's input.
"""
