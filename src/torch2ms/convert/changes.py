"""What the converter did to a file, one ``Change`` per torch use, and the marks it writes into code.

Every stage records through the same type; its ``line`` is the line of the original source, set
where the change is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..i18n import N_, _, every_language

MARK = "# torch2ms:"
ACTIONS = ("converted", "review", "not-converted")


@dataclass
class Change:
    api: str  # the canonical torch name (or a construct: "training loop")
    action: str  # one of ACTIONS
    note: str = ""
    line: int = 0  # in the original source


def earlier_marks(source: str) -> dict[int, set[str]]:
    """Line of a statement → the APIs a previous conversion marked "not converted" above it.

    Converting converted code again must leave those calls as they are: the mark says a person ports
    them, and what surrounds them has become MindSpore code the KB rules would misread. The mark is
    recognised in every language it may have been written in."""
    forms = _not_converted_forms()
    if not any(prefix in source for prefix, _sep in forms):
        return {}
    out: dict[int, set[str]] = {}
    pending: set[str] = set()
    for number, line in enumerate(source.splitlines(), 1):
        text = line.strip()
        form = next(((p, sep) for p, sep in forms if text.startswith(p)), None)
        if form is not None:
            pending.add(text[len(form[0]) :].split(form[1], 1)[0].strip())
        elif text and not text.startswith("#"):
            if pending:
                out[number] = pending
            pending = set()
    return out


def _not_converted_forms() -> list[tuple[str, str]]:
    """(the mark's text before the API, what follows the API) in each language."""
    forms = []
    for template in every_language(NOT_CONVERTED):
        before, after = template.split("{api}", 1)
        forms.append((f"{MARK} {before}", after.split("{note}", 1)[0].strip() or ":"))
    return forms


NOT_CONVERTED = N_("not converted — {api}: {note}")


def not_converted_mark(api: str, note: str) -> str:
    """The comment put above a statement holding something left for a person."""
    return f"{MARK} " + _(NOT_CONVERTED).format(api=api, note=note)


def review_mark(api: str, note: str) -> str:
    """The comment put above a statement whose conversion a person should check."""
    return f"{MARK} " + _("review — {api}: {note}").format(api=api, note=note)
