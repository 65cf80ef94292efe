"""The leaderboard: what it reads, the report dict, and every table and plot rendered from it.

``inputs`` reads the ground truth, judges.toml rows and the predictions files (one per judge for
the ground truth's dataset version); ``report`` builds the whole leaderboard as one JSON-able
dict, a pure function of those inputs; ``tables`` renders markdown, CSV and HTML from that dict
and compares fresh outputs with committed ones; ``plots`` draws the PNGs from it. The Space reads
only what these wrote.
"""
