"""What the converter did to a file, one ``Change`` per torch use, and the marks it writes into code.

Every stage records through the same type; its ``line`` is the line of the original source, set
where the change is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..i18n import _

MARK = "# torch2ms:"
ACTIONS = ("converted", "review", "not-converted")


@dataclass
class Change:
    api: str  # the canonical torch name (or a construct: "training loop")
    action: str  # one of ACTIONS
    note: str = ""
    line: int = 0  # in the original source

    def as_dict(self) -> dict[str, str | int]:
        return {"api": self.api, "action": self.action, "note": self.note, "line": self.line}


def not_converted_mark(api: str, note: str) -> str:
    """The comment put above a statement holding something left for a person."""
    return f"{MARK} " + _("not converted — {api}: {note}").format(api=api, note=note)


def review_mark(api: str, note: str) -> str:
    """The comment put above a statement whose conversion a person should check."""
    return f"{MARK} " + _("review — {api}: {note}").format(api=api, note=note)
