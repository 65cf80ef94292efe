"""From extracted trajectories to gold labels: proposals, reviews, agreement, gold.

A labeller decides one thing per trajectory (``decisions.TrajectoryDecision``: the onset, the act
there, the taxonomy and the cited evidence); ``decisions.step_labels`` is the only place that
decision is expanded to one label per decision point. ``proposers`` (one module per source,
registered like backends) propose decisions by documented rules; ``reviews`` records human and
agent reviews and merges them over the proposals (adjudication > agreeing reviews > proposal);
``agreement`` measures proposer-vs-reviewer and reviewer-vs-reviewer agreement; ``gold`` applies
the reviews of one source; ``console`` is the review command's terminal session; ``evaluation``
scores proposers against reviews. Committed files hold ids, labels and the project's own words
only, never upstream text.
"""
