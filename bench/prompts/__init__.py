"""What a judge reads and what it answers: the prompt renderer and the verdict parsers.

``renderer`` turns one decision point into chat messages through a sandboxed jinja2 template
(``templates/<name>.j2``); it never drops or cuts the policy or the judged action. ``parsers``
reads a judge's raw text back into a checked ``bench.core.verdict.Verdict``, bound to the last
verdict marker, every field checked.
"""
