"""Foresight Bench: a benchmark harness for step-level agent-safety judges.

Importing this package does no I/O and imports no heavy SDK; every script lives in its own
module (``bench/extract.py``, ``bench/decide.py``, ...) with a ``main(argv) -> int``.
"""

__version__ = "0.1.0"
