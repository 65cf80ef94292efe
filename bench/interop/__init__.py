"""Interoperation with other evaluation tools: the benchmark as an Inspect AI task, and an Inspect
log imported as a predictions file (``inspect_task``, ``inspect_log``)."""
