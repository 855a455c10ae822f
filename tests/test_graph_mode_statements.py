"""Issue 24, item 3 (R3, R27): statements GRAPH_MODE rejects inside construct, as a generated matrix
of statement kind × place (forward body, nested if, nested for, a helper method forward calls) ×
mode.

Kinds with an equivalent (``del`` of locals, ``map(lambda ...)`` with free variables) are rewritten,
and kinds GRAPH_MODE compiles as written (``assert`` on tensors, ``raise`` with formatted messages,
``global`` reads, comprehensions) are kept: the converted net equals torch in PyNative and in
GRAPH_MODE. Kinds without an equivalent (``try``/``except``, ``nonlocal``, ``yield``, ``del`` of an
item) are named before anything runs: a mark above the line in the converted code, a ``review``
line in the conversion report and a risk in ``torch2ms scan``, all at the statement's line; the
converted net still equals torch in PyNative.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import (
    MODES,
    compare_modes,
    convert_pair,
    load_all,
    ms_mode,
    relative_error,
    weights_by_converter,
)
from requires_support import require_module

from torch2ms.analysis.scan import scan_source
from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

# kind → (lines that transform ``x``; the first line whose statement GRAPH_MODE rejects, 0-based, or None)
REWRITTEN = {
    "del-local": (["y = x * 2", "x = x + y", "del y"], None),
    "del-tuple": (["y = x * 2", "z = x + 1", "x = y - z", "del y, z"], None),
    "del-parenthesised": (["y = x * 2", "x = x + y", "del (y)"], None),
    "map-lambda": (["a, b = map(lambda t: t * self.scale, x.chunk(2, dim=-1))", "x = torch.cat([b, a], dim=-1)"], None),
    "map-lambda-two": (
        [
            "a, b = map(lambda t, u: t + u * self.scale, x.chunk(2, dim=-1), (x * 3).chunk(2, dim=-1))",
            "x = torch.cat([a * b, b], dim=-1)",
        ],
        None,
    ),
    "map-lambda-list": (["x = torch.cat(list(map(lambda t: t - self.scale, [x, x * 2])), dim=-1)[:, :4]"], None),
    "assert-tensor": (
        ["assert x.shape[-1] == 4, f'bad width {x.shape[-1]}'", "assert (x.abs() >= 0).all()", "x = x + 1"],
        None,
    ),
    "raise-formatted": (
        [
            "if x.shape[-1] != 4:",
            "    raise ValueError(f'width {x.shape[-1]} is not 4')",
            "if x.ndim != 2:",
            "    raise ValueError('rank {} is not 2'.format(x.ndim))",
            "if x.shape[0] > 1000:",
            "    raise ValueError('batch %d too large' % x.shape[0])",
            "x = x * 3",
        ],
        None,
    ),
    "global-read": (["global SCALE", "x = x * SCALE"], None),
    "comprehensions": (
        [
            "parts = [p * 2 for p in x.chunk(2, dim=-1)]",
            "d = {i: p for i, p in enumerate(parts)}",
            "x = torch.cat([d[1], d[0]], dim=-1) + sum(p.sum() for p in parts)",
        ],
        None,
    ),
}
# kind → (lines; the line scan names, 0-based; the line the report and the mark name: the generator's def for yield)
MARKED = {
    "try-except": (["try:", "    x = self.fc(x)", "except RuntimeError:", "    x = x * 0"], 0, 0),
    "nonlocal": (["acc = x", "def bump():", "    nonlocal acc", "    acc = acc + 1", "bump()", "x = acc"], 2, 2),
    "yield": (["def twice():", "    yield x * 2", "x = list(twice())[0]"], 1, 0),
    "del-item": (["parts = [x, x * 2]", "del parts[0]", "x = parts[0]"], 1, 1),
    # GRAPH_MODE compiles it but reads the global's compile-time value and drops the assignment, silently
    "global-write": (["global SCALE", "SCALE = SCALE * 1.0", "x = x * SCALE"], 0, 0),
}
PLACES = ("forward", "nested-if", "nested-for", "helper")

TEMPLATE = """\
import torch
from torch import nn

SCALE = 0.5


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = 2.0
{helper}
    def forward(self, x):
        x = self.fc(x)
{body}
        return x
"""


def _source(lines: list[str], place: str) -> tuple[str, int]:
    """The torch source of one cell of the matrix, and the line number of ``lines[0]``."""

    def block(indent: int) -> str:
        return "\n".join(" " * indent + line for line in lines)

    helper, body = "", ""
    if place == "forward":
        body = block(8)
    elif place == "nested-if":
        body = "        if x.shape[0] > 0:\n" + block(12)
    elif place == "nested-for":
        body = "        for _ in range(1):\n" + block(12)
    else:
        helper = "\n    def helper(self, x):\n" + block(8) + "\n        return x\n"
        body = "        x = self.helper(x)"
    src = TEMPLATE.format(helper=helper, body=body)
    first = src.splitlines().index(next(s for s in src.splitlines() if s.strip() == lines[0].strip())) + 1
    return src, first


INPUT = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "place"), product(sorted(REWRITTEN), PLACES, pairs=False))
def test_r27_statement_equal_to_torch_in_both_modes(kind, place, tmp_path):
    require_module("torch")
    lines, _ = REWRITTEN[kind]
    src, _ = _source(lines, place)
    tmod, mmod, code = convert_pair(src, tmp_path)
    body = code.split("def construct")[0 if place == "helper" else 1]
    assert "del " not in body and "map(" not in body, code
    errors = compare_modes(tmod.Net(), mmod.Net, [INPUT], tmp_path)
    assert all(errors[m] <= 1e-5 for m in MODES), errors


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("kind", sorted(MARKED))
def test_r3_statement_without_equivalent_is_named_before_running(kind, place):
    lines, scanned, reported = MARKED[kind]
    src, first = _source(lines, place)
    res = convert_source(src, "net.py")
    assert res.error is None, res.error
    reviews = [c.line for c in res.changes if c.action == "review" and "GRAPH_MODE" in c.note]
    assert first + reported in reviews, (first + reported, [(c.line, c.note) for c in res.changes])
    # the mark stands right above the statement (or the def holding it)
    out = res.code.splitlines()
    statement = next(i for i, text in enumerate(out) if text.strip() == lines[reported].strip())
    above = statement - 1
    while out[above].strip().startswith("#") and not out[above].strip().startswith("# torch2ms: GRAPH_MODE"):
        above -= 1
    assert out[above].strip().startswith("# torch2ms: GRAPH_MODE"), res.code
    risks = scan_source(src, "net.py").risks
    assert any(r.line == first + scanned for r in risks), (first + scanned, risks)


@pytest.mark.slow
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("kind", sorted(MARKED))
def test_r27_marked_statement_still_equal_to_torch_in_pynative(kind, place, tmp_path):
    require_module("torch")
    import torch

    lines = MARKED[kind][0]
    src, _ = _source(lines, place)
    import mindspore as ms

    tmod, mmod, _ = convert_pair(src, tmp_path, allow_marks=True)
    tnet = tmod.Net().eval()
    with torch.no_grad():
        expected = tnet(torch.from_numpy(INPUT))
    with ms_mode("PYNATIVE_MODE"):
        mnet = mmod.Net()
        load_all(mnet, weights_by_converter(tnet, tmp_path))
        assert relative_error(expected, mnet(ms.Tensor(INPUT))) <= 1e-5


def test_r3_every_kind_and_place_is_in_the_matrix():
    """The matrix covers each kind the issue names, in every place."""
    kinds = set(REWRITTEN) | set(MARKED)
    for named in (
        "del-local",
        "try-except",
        "assert-tensor",
        "raise-formatted",
        "global-read",
        "global-write",
        "nonlocal",
        "yield",
    ):
        assert named in kinds
    assert {"comprehensions", "map-lambda"} <= kinds
    for kind in kinds:
        lines = REWRITTEN[kind][0] if kind in REWRITTEN else MARKED[kind][0]
        for place in PLACES:
            src, first = _source(lines, place)
            compile(src, "net.py", "exec")
            assert src.splitlines()[first - 1].strip() == lines[0].strip()
    assert textwrap.dedent(TEMPLATE) == TEMPLATE
