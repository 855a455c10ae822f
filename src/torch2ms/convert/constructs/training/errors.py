"""Why a training loop stays torch code."""


class NotConvertible(Exception):
    """The loop is left as torch code, marked with this reason."""
