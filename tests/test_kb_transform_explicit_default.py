"""A transform rule meets the argument written out at its torch default (``nn.Upsample(None, None, 'nearest',
None, True)``: the upsample_scale transform called float(None) and the whole call was lost to "rule failed").
The class: every (entry, argument) whose rule is a transform and whose signature gives a default, spelled at
that default by keyword and by position (earlier parameters at their defaults too), rewrites, or is refused
with a note (Unsupported); never a crash. Static: the rewrite needs no framework; the differential matrix of
spellings at their defaults is tests/test_kb_explicit_defaults.py.
"""

from __future__ import annotations

import pytest
from test_kb_dropped_arguments import _call

from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import rewrite_call
from torch2ms.kb.transforms import Unsupported

KB = load_kb()
ROWS = [
    (e.torch, name)
    for e in KB
    if e.kind in ("function", "method", "class") and e.status != "no-equivalent"
    for name, rule in e.args.items()
    if rule.transform and name in e.sig_defaults()
]


def test_the_matrix_holds_the_upsample_find():
    assert ("torch.nn.Upsample", "scale_factor") in ROWS and len(ROWS) >= 60


@pytest.mark.parametrize("form", ["keyword", "positional"])
@pytest.mark.parametrize("api, name", ROWS, ids=[f"{a}:{n}" for a, n in ROWS])
def test_a_transform_takes_its_argument_written_at_the_default(api, name, form):
    entry = KB.get(api)
    shape = _call(entry, name, entry.sig_defaults()[name], form)
    if shape is None:
        return  # keyword-only: the keyword form covers it
    try:
        res = rewrite_call(entry, *shape, receiver="x" if entry.is_method else None)
    except Unsupported as exc:
        assert str(exc), (api, name)  # refused, with a reason
        return
    assert res.source or (not res.ok and res.notes), (api, name, form)  # rewritten, or refused with a reason
