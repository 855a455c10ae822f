"""torch's deprecated ``size_average=``/``reduce=`` (2018-era tutorials: ``F.nll_loss(out, y, size_average=False)``)
are canonicalised into the ``reduction=`` they stand for (kb/rewrite.py ``_legacy_reduction``) instead of being
refused. Generated matrix: every KB loss with the three parameters x every literal combination x class/function
form x keyword/positional spelling, each run on real torch and real MindSpore (the entry's first case with the
legacy arguments added)."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest
from matrix_support import covering

from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import rewrite_call

KB = load_kb()
LOSSES = sorted(
    (e for e in KB if {"size_average", "reduce", "reduction"} <= set(e.sig_names()) and e.cases),
    key=lambda e: e.torch,
)
_NO_REDUCTION = re.compile(r",?\s*reduction\s*=\s*'[a-z]+'")
VALUES = ["None", "True", "False"]
COMBOS = [(s, r) for s, r in itertools.product(VALUES, VALUES) if (s, r) != ("None", "None")]


def _with_legacy(entry, case, size_average: str, reduce: str):
    """The case with the legacy arguments in place of its ``reduction=`` (torch ignores it then)."""
    legacy = f"size_average={size_average}, reduce={reduce}"
    case = dataclasses.replace(
        case, call=_NO_REDUCTION.sub("", case.call), init=_NO_REDUCTION.sub("", case.init) if case.init else case.init
    )
    if entry.kind == "class":
        init = f"{case.init}, {legacy}" if case.init else legacy
        return dataclasses.replace(case, init=init, graph=False)
    assert case.call.endswith(")")
    return dataclasses.replace(case, call=f"{case.call[:-1]}, {legacy})", graph=False)


def test_the_matrix_covers_the_losses():
    names = {e.torch for e in LOSSES}
    assert {
        "torch.nn.NLLLoss",
        "torch.nn.functional.nll_loss",
        "torch.nn.MSELoss",
        "torch.nn.CrossEntropyLoss",
    } <= names
    assert len(LOSSES) >= 15, len(LOSSES)


@pytest.mark.parametrize("entry", LOSSES, ids=lambda e: e.torch)
@pytest.mark.parametrize(("size_average", "reduce"), COMBOS)
def test_legacy_reduction_rewrites_to_reduction(entry, size_average, reduce):
    """The rewrite names the reduction torch's legacy rule gives, and no legacy argument is left."""
    want = {
        ("False", "None"): "sum",
        ("False", "True"): "sum",
        ("True", "False"): "none",
        ("None", "False"): "none",
        ("False", "False"): "none",
        ("True", "True"): "mean",
        ("True", "None"): "mean",
        ("None", "True"): "mean",
    }
    required = [p for p in entry.sig if "=" not in p and not p.startswith("*")]
    legacy = [("size_average", size_average), ("reduce", reduce)]
    r = rewrite_call(entry, [f"a{i}" for i in range(len(required))], legacy)
    assert r.ok, r.notes
    assert "size_average" not in r.source and "reduce=" not in r.source, r.source
    if r.args is not None:  # a plain call (a handler may spell the reduction out): the keyword it got
        assert ("reduction", repr(want[(size_average, reduce)])) in (r.kwargs or []), r.source


@pytest.mark.parametrize("kwargs", [[("size_average", "flag")], [("reduce", "False"), ("reduction", "'sum'")]])
def test_non_literal_or_mixed_legacy_value_is_still_refused(kwargs):
    entry = KB.get("torch.nn.functional.nll_loss")
    r = rewrite_call(entry, ["x", "y"], kwargs)
    assert not r.ok and any("size_average" in n or "reduce" in n for n in r.notes), r.notes


# make test: every loss with one of the legacy pairs, each pair on some loss (make test-full: every loss × pair)
DIFFERENTIAL = covering(
    [
        pytest.param(s, r, e, id=f"{s}-{r}-{e.torch}")
        for e in LOSSES
        for s, r in [("False", "None"), ("None", "False"), ("True", "True")]
    ],
    axes=lambda p: ((p.values[0], p.values[1]), p.values[2].torch),
)


@pytest.mark.parametrize(("size_average", "reduce", "entry"), DIFFERENTIAL)
def test_legacy_reduction_matches_torch(entry, size_average, reduce):
    from torch2ms.proof.cases import run_case

    case = _with_legacy(entry, entry.cases[0], size_average, reduce)
    run_case(entry, case, 0, KB)  # raises CaseFailure when MindSpore's value differs from torch's
