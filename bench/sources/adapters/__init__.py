"""One module per raw source format, each registering its adapter with ``@register(name)``.

An adapter reads one upstream format into canonical trajectories (``bench.core.schema``);
malformed records become rejects with a reason, never crashes or silent drops. The module's name
is the source's name; modules starting with ``_`` are shared helpers, not adapters. Adding a
source: this module (with its pins in ``bench/sources/pins/<name>.json`` and its card text on the
adapter) and a proposer in ``bench/labelling/proposers/<name>.py``.
"""
