"""``torch2ms replay``: a recorded torch run's call configurations replayed through the KB mapping on
MindSpore, against torch, in the user's own regime (issue 25).

``record.record_calls`` (one forward) → ``run.replay`` (the report and its table of APIs) →
``export.export_cases`` (the failing configurations as KB differential cases); ``cli`` is the command.
Nothing is imported here, so that registering the command costs nothing.
"""
