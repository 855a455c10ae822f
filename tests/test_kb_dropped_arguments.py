"""Issue 24 (signature audit): an argument the KB drops with a note (``name = { ms = false, note = ... }``:
MindSpore has no such option and the values do not depend on it, or the note says how they differ) is
never dropped in silence. Generated from the KB: every such (entry, argument) × call shape (keyword,
positional where the signature allows, keywords out of order) puts the rule's note on the call; the
argument at its default value puts none, and neither does a value at which the drop is exact (the rule's
``exact``, from its class in kb/data/drop_reasons.toml: ``device='cuda'``, ``inplace=True``, ``dtype=torch.float32``
also as converted, ``ms.float32``): the note is then for ``lookup``, not a review mark. No framework needed:
the rewrite is static.
"""

from __future__ import annotations

import pytest

from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import drop_is_exact, rewrite_call
from torch2ms.kb.source import normalise

KB = load_kb()


def _dropping():
    out = []
    for e in KB:
        if e.kind not in ("function", "method", "class") or e.status == "no-equivalent":
            continue
        for name, rule in e.args.items():
            if rule.ms is None and not rule.transform and not rule.unsupported and rule.note and name in e.sig_names():
                out.append((e.torch, name))
    return out


CASES = _dropping()
FORMS = ["keyword", "positional", "keywords_reversed"]


def _call(entry, name: str, value: str, form: str) -> tuple[list[str], list[tuple[str, str]]] | None:
    names, sig = entry.sig_names(), list(entry.sig)
    idx = names.index(name)
    defaults = entry.sig_defaults()
    required = [n for n, s in zip(names, sig, strict=True) if "=" not in s and not s.startswith("*") and n != name]
    if form == "positional":
        star = next((i for i, s in enumerate(sig) if s.startswith("*")), len(sig))
        if idx >= star:
            return None  # keyword-only in torch
        return [defaults.get(n, f"a_{n}") for n in names[:idx]] + [value], []
    kwargs = [(n, f"a_{n}") for n in required if names.index(n) > 0] + [(name, value)]
    # the first parameter by position when it is required or a ``*size`` collecting them
    first = bool(names) and (names[0] in required or (sig[0].startswith("*") and not sig[0].startswith("**")))
    args = [f"a_{names[0]}"] if first else []
    if form == "keywords_reversed":
        kwargs.reverse()
    return args, kwargs


def test_the_matrix_is_not_empty():
    apis = {a for a, _ in CASES}
    assert len(CASES) >= 40 and len(apis) >= 15, (len(CASES), sorted(apis))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("api, name", CASES, ids=[f"{a}:{n}" for a, n in CASES])
def test_dropped_argument_is_said(api, name, form):
    entry = KB.get(api)
    shape = _call(entry, name, "v_other", form)
    if shape is None:
        return  # keyword-only: the keyword forms cover it
    res = rewrite_call(entry, *shape, receiver="x" if entry.is_method else None)
    if "*" in entry.args[name].exact:  # exact at any value: said by lookup, no mark on the call
        assert entry.arg_note(name) not in res.notes, (api, name, form, res.notes)
    else:
        assert entry.arg_note(name) in res.notes, (api, name, form, res.notes)
    assert "v_other" not in res.source, res.source  # dropped, not passed on


EXACT = [
    (api, name, value)
    for api, name in CASES
    for listed in KB.get(api).args[name].exact
    if listed != "*"
    # as written, and as the converter hands it over once the value itself was converted (torch.float32 → ms.float32)
    for value in dict.fromkeys((listed, listed.replace("torch.", "ms.", 1), listed.replace("torch.", "mindspore.", 1)))
]


def test_the_exact_matrix_is_not_empty():
    assert len(EXACT) >= 100 and {v for *_, v in EXACT} >= {"torch.float32", "ms.float32", "torch.channels_last"}


@pytest.mark.parametrize("form", ["keyword", "positional"])
@pytest.mark.parametrize("api, name, value", EXACT, ids=[f"{a}:{n}={v}" for a, n, v in EXACT])
def test_dropped_argument_at_an_exact_value_is_not_marked(api, name, value, form):
    entry = KB.get(api)
    shape = _call(entry, name, value, form)
    if shape is None:
        return  # keyword-only: the keyword form covers it
    res = rewrite_call(entry, *shape, receiver="x" if entry.is_method else None)
    assert drop_is_exact(entry.args[name], normalise(value))
    assert entry.arg_note(name) not in res.notes, (api, name, value, res.notes)
    assert value not in res.source or value == entry.sig_defaults().get(name), res.source


@pytest.mark.parametrize("api, name", CASES, ids=[f"{a}:{n}" for a, n in CASES])
def test_dropped_argument_at_its_default_is_not_noted(api, name):
    entry = KB.get(api)
    default = entry.sig_defaults().get(name, "None")
    shape = _call(entry, name, default, "keyword")
    res = rewrite_call(entry, *shape, receiver="x" if entry.is_method else None)
    assert entry.arg_note(name) not in res.notes, (api, name, res.notes)
    assert normalise(default)  # the default is source text
