"""Issue 24 (signature audit): an argument the KB marks as refused (``unsupported``) is refused in every
entry that has such a rule, whatever the entry's rewrite — a plain argument rule or a placeholder
template (``{input} / ops.clamp(...)``), which used to drop ``out=``/``dtype=``/``generator=`` in
silence while the audit counted them as marked. Generated from the KB: every such (entry, argument) ×
call shape (keyword, positional where the signature allows, keywords out of order); the default value
is still converted. No framework needed: the rewrite is static.
"""

from __future__ import annotations

import pytest

from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import rewrite_call

KB = load_kb()


def _refusing():
    out = []
    for e in KB:
        if e.kind not in ("function", "method", "class") or e.status == "no-equivalent":
            continue
        names = e.sig_names()
        for name, rule in e.args.items():
            if rule.unsupported and name in names:
                out.append((e.torch, name))
    return out


CASES = _refusing()
FORMS = ["keyword", "positional", "keywords_reversed"]


def _value(entry, name: str) -> str:
    rule = entry.args[name]
    return "v_other" if "*" in rule.unsupported else rule.unsupported[0]


def _call(entry, name: str, value: str, form: str) -> tuple[list[str], list[tuple[str, str]]] | None:
    names, sig = entry.sig_names(), list(entry.sig)
    idx = names.index(name)
    required = [n for n, s in zip(names, sig, strict=True) if "=" not in s and not s.startswith("*") and n != name]
    if form == "positional":
        star = next((i for i, s in enumerate(sig) if s.startswith("*")), len(sig))
        if idx >= star:
            return None  # keyword-only in torch
        # the ones before it at their defaults (a name where the default is None and no rule refuses
        # another value): only this one is refused
        defaults = entry.sig_defaults()
        refusable = {n for n, r in entry.args.items() if r.unsupported and n in defaults}
        before = [defaults[n] if n in refusable or defaults.get(n, "None") != "None" else f"a_{n}" for n in names[:idx]]
        return [*before, value], []
    kwargs = [(n, f"a_{n}") for n in required if names.index(n) > 0] + [(name, value)]
    args = [f"a_{names[0]}"] if names and names[0] in required else []
    if form == "keywords_reversed":
        kwargs.reverse()
    return args, kwargs


def _receiver(entry) -> str | None:
    return "x" if entry.is_method else None


def test_the_matrix_is_not_empty():
    templated = [c for c in CASES if KB.get(c[0]).template]
    handled = [c for c in CASES if KB.get(c[0]).template.startswith("@")]
    assert len(CASES) >= 100 and len(templated) >= 5 and len(handled) >= 20, (len(CASES), templated, handled)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("api, name", CASES, ids=[f"{a}:{n}" for a, n in CASES])
def test_refused_argument_is_refused(api, name, form):
    entry = KB.get(api)
    shape = _call(entry, name, _value(entry, name), form)
    if shape is None:
        return  # keyword-only: the keyword forms cover it
    res = rewrite_call(entry, *shape, receiver=_receiver(entry))
    assert not res.ok, (api, name, form, res.source)
    note = entry.arg_note(name)
    assert (note and note in " ".join(res.notes)) or "has no MindSpore form" in " ".join(res.notes), res.notes
