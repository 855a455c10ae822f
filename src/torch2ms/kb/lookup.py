"""``torch2ms lookup``: one API's mapping, argument differences, pitfall, backends and example (R2, R4)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..i18n import _
from . import KB, ArgRule, Entry, load_kb
from .rewrite import rewrite_expression
from .transforms import HANDLERS, TRANSFORMS


@dataclass
class LookupResult:
    query: str
    entry: Entry | None
    suggestions: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.entry is not None


def _doc_line(fn) -> str:
    doc = (fn.__doc__ or "").strip().splitlines()
    return _(doc[0].replace("``", "")) if doc else ""  # in Chinese where kb/summaries.py lists it


def _dropped_line(name: str, rule: ArgRule) -> str:
    """How a dropped argument shows: exact at any value, marked on the converted call unless at its exact
    values, or (no note: the audit's unmapped) dropped in silence."""
    if not rule.note:
        return _("{name}: dropped (no meaning in MindSpore)").format(name=name)
    if "*" in rule.exact:
        return _("{name}: dropped (the results do not depend on it: no review mark)").format(name=name)
    if rule.exact:
        return _("{name}: dropped; a value other than {values} gets a review mark with this note").format(
            name=name, values=", ".join(rule.exact)
        )
    return _("{name}: dropped; a value other than its default gets a review mark with this note").format(name=name)


def argument_differences(entry: Entry) -> list[str]:
    """Human-readable lines, one per argument rule."""
    lines = []
    defaults = entry.sig_defaults()
    differs = _("always passed, MindSpore's default differs")
    for name, rule in entry.args.items():
        default = _(" (torch default {value})").format(value=defaults[name]) if name in defaults else ""
        if rule.unsupported:
            vals = _("any value but the default") if "*" in rule.unsupported else ", ".join(rule.unsupported)
            text = _("{name}: not supported for {values}.").format(name=name, values=vals)
            note = entry.arg_note(name)
            lines.append(
                f"{text}{'' if text.endswith('。') else ' '}{note}".strip()
            )  # no space after a Chinese full stop
            continue
        always = f" — {differs}" if rule.always else ""
        if rule.transform:
            why = _doc_line(TRANSFORMS[rule.transform]) if rule.transform in TRANSFORMS else rule.transform
            lines.append(_("{name}{default}: {why}").format(name=name, default=default, why=why) + always)
        elif rule.ms is None:
            lines.append(_dropped_line(name, rule))
        elif rule.ms != name:
            lines.append(f"{name} → {rule.ms}{default}{always}")
        elif rule.always:
            lines.append(_("{name}{default}: {why}").format(name=name, default=default, why=differs))
        if rule.note and not rule.unsupported:
            lines.append(f"  {entry.arg_note(name)}")
    if entry.template.startswith("@") and entry.template[1:] in HANDLERS:
        lines.append(_("call rewritten: {how}").format(how=_doc_line(HANDLERS[entry.template[1:]])))
    elif entry.template:
        lines.append(_("call rewritten as: {template}").format(template=entry.template))
    return lines


def example(entry: Entry, kb: KB) -> tuple[str, str] | None:
    """(before, after) source from the entry's first differential case."""
    if not entry.cases or entry.status == "no-equivalent":
        return None
    case = entry.cases[0]
    owners = {"m": "torch.nn.Module", "opt": "torch.optim.Optimizer"}
    owners.update({k: "torch.Tensor" for k in case.inputs})
    before_lines = []
    if case.setup:
        before_lines.append(case.setup)
    whole_call = case.check in ("optimizer", "scheduler")  # the call itself builds the object
    if entry.kind == "class" and not whole_call:
        before_lines.append(f"m = {entry.torch}({case.init or ''})")
    before_lines.append(case.call if whole_call else f"out = {case.call}")
    before = "\n".join(before_lines)
    after = rewrite_expression(kb, before, owners)
    return before, after.source


def lookup(name: str, kb: KB | None = None) -> LookupResult:
    kb = kb or load_kb()
    entry = kb.get(name)
    if entry is None:
        return LookupResult(name, None, kb.suggest(name))
    return LookupResult(name, entry)


def lookup_dict(res: LookupResult, kb: KB | None = None) -> dict:
    kb = kb or load_kb()
    if not res.found:
        return {"query": res.query, "found": False, "suggestions": res.suggestions}
    e = res.entry
    assert e is not None
    ex = example(e, kb)
    return {
        "query": res.query,
        "found": True,
        "torch": e.torch,
        "aliases": list(e.aliases),
        "kind": e.kind,
        "mindspore": e.ms,
        "status": e.status,
        "backends": list(e.backends),
        "note": e.note,
        "note_zh": e.note_zh,
        "argument_differences": argument_differences(e),
        "parameter_renames": {k: v for k, v in e.params.items() if v != k},
        "example": {"torch": ex[0], "mindspore": ex[1]} if ex else None,
        "tests": len(e.cases),
        "proven_by": e.proven_by,
    }
