"""The records and plumbing every stage shares.

``schema`` (trajectories, turns, decision points; ``decision_points`` is the only place a
pre-execution view is cut), ``labels`` (the closed sets and the one set of label fields),
``verdict`` (a judge's parsed answer), ``taxonomy`` (the one loader of data/taxonomy.toml),
``ids`` (ids and their sort order), ``jsonl`` (JSON Lines and content hashes), ``registry`` (the
one plug-in registry shape), ``paths`` (every default path), ``errors`` (the error hierarchy:
every message says what to do next) and ``script`` (what each command's ``main`` shares).

Nothing here imports another folder of the package, and ``import bench.core`` does no I/O.
"""
