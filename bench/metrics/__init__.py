"""Step- and trajectory-level metrics: pure, vectorised functions over arrays.

``inputs`` (typed arrays: ``Gold``, ``Predictions``, the ``CostMatrix``; ``align`` checks ids),
``stats`` (per-trajectory sufficient statistics and every metric computed from them),
``bootstrap`` (the trajectory bootstrap, paired intervals and tie groups) and ``point`` (point
estimates, curves, latency and cost). Thresholds, zero-division rules and the treatment of
invalid verdicts are explicit parameters. Definitions: docs/metrics.md.
"""
