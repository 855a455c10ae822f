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


def earlier_marks(source: str) -> dict[int, set[str]]:
    """Line of a statement → the APIs a previous conversion marked "not converted" above it.

    Converting converted code again must leave those calls as they are: the mark says a person ports
    them, and what surrounds them has become MindSpore code the KB rules would misread."""
    if f"{MARK} not converted — " not in source:
        return {}
    out: dict[int, set[str]] = {}
    pending: set[str] = set()
    prefix = f"{MARK} not converted — "
    for number, line in enumerate(source.splitlines(), 1):
        text = line.strip()
        if text.startswith(prefix):
            pending.add(text[len(prefix) :].split(":", 1)[0].strip())
        elif text and not text.startswith("#"):
            if pending:
                out[number] = pending
            pending = set()
    return out


def not_converted_mark(api: str, note: str) -> str:
    """The comment put above a statement holding something left for a person."""
    return f"{MARK} " + _("not converted — {api}: {note}").format(api=api, note=note)


def review_mark(api: str, note: str) -> str:
    """The comment put above a statement whose conversion a person should check."""
    return f"{MARK} " + _("review — {api}: {note}").format(api=api, note=note)
