"""Issue 24, item 2 (R6, R27): einops as users write it, converted, equal to einops-on-torch in
PyNative and GRAPH_MODE — a generated matrix.

Patterns: named axes, grouping and ungrouping, ``...``, anonymous ``1``/``()`` and numbers, repeat
with new axes, reduce with every reduction (mean, sum, max, min, prod). Spellings of each call, in
one forward: the pattern as a literal, the pattern in a variable with the axis lengths from
attributes and locals, the pattern and the reduction as keywords, ``map(lambda t: rearrange(t, ...,
h=self.heads), ...)`` (GRAPH: "The Map operator don't support Closure with free variable yet" before
it was rewritten), a list comprehension, and the ``Rearrange`` / ``Reduce`` layers (alone and inside
``nn.Sequential``). Each row converts one generated torch file and runs it against einops on torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import MODES, compare_modes, convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential
require_module("einops")

_REDUCTIONS = ("mean", "sum", "max", "min", "prod")

# (kind, pattern, axis lengths, input shape)
REARRANGE = [
    ("rearrange", "b c h w -> b h w c", {}, (2, 3, 4, 5)),
    ("rearrange", "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 2, "p2": 3}, (2, 3, 4, 6)),
    ("rearrange", "b n (h d) -> b h n d", {"h": 2}, (2, 5, 8)),
    ("rearrange", "b h n d -> b n (h d)", {}, (2, 2, 5, 4)),
    ("rearrange", "b (h w) c -> b c h w", {"h": 2}, (2, 6, 3)),
    ("rearrange", "b ... -> b (...)", {}, (2, 3, 4)),
    ("rearrange", "... c -> c ...", {}, (2, 3, 4)),
    ("rearrange", "... n d -> ... (n d)", {}, (2, 3, 4, 5)),
    ("rearrange", "b c h w -> (b h) w c", {}, (2, 3, 4, 5)),
    ("rearrange", "b 1 n -> n () b", {}, (2, 1, 3)),
    ("rearrange", "b n d -> b n d 1", {}, (2, 3, 4)),
    ("rearrange", "(b1 b2) n -> b2 (n b1)", {"b1": 2}, (6, 3)),
]
REPEAT = [
    ("repeat", "n d -> b n d", {"b": 3}, (4, 5)),
    ("repeat", "() n d -> b n d", {"b": 2}, (1, 4, 5)),
    ("repeat", "h w -> h w c", {"c": 3}, (4, 5)),
    ("repeat", "b n -> b (n r)", {"r": 2}, (2, 3)),
    ("repeat", "b n -> (r b) n", {"r": 2}, (2, 3)),
    ("repeat", "h w -> (h 2) (w 2)", {}, (3, 4)),
    ("repeat", "... d -> ... k d", {"k": 2}, (2, 3, 4)),
]
REDUCE = [
    (f"reduce-{r}", pattern, axes, shape)
    for r in _REDUCTIONS
    for pattern, axes, shape in (
        ("b c (h 2) (w 2) -> b c h w", {}, (2, 3, 4, 4)),
        ("b n d -> b d", {}, (2, 3, 4)),
        ("b (n k) d -> b n", {"k": 2}, (2, 4, 3)),
        ("b ... d -> b () d", {}, (2, 3, 2, 4)),
    )
]
CASES = REARRANGE + REPEAT + REDUCE


def _kwargs(axes: dict[str, int], how: str) -> str:
    """Axis lengths as keyword arguments: literals, or the names of locals / attributes holding them."""
    if how == "literal":
        return "".join(f", {k}={v}" for k, v in axes.items())
    return "".join(f", {k}={how}{k}" for k in axes)


def _source(kind: str, pattern: str, axes: dict[str, int]) -> str:
    """A torch Net whose forward spells one einops call several ways and returns them all."""
    func, _, reduction = kind.partition("-")
    red = f", '{reduction}'" if reduction else ""
    red_kw = f", reduction='{reduction}'" if reduction else ""
    attrs = "".join(f"\n        self.{k} = {v}" for k, v in axes.items())
    locals_ = "".join(f"\n        {k}_ = self.{k}" for k in axes)
    lines = [
        f"a = einops.{func}(x, '{pattern}'{red}{_kwargs(axes, 'literal')})",
        f"p = '{pattern}'",
        f"b = {func}(x, p{red}{_kwargs(axes, 'self.')})",
        f"c = {func}(x, pattern='{pattern}'{red_kw}{''.join(f', {k}={k}_' for k in axes)})",
        f"d, e = map(lambda t: {func}(t, p{red}{_kwargs(axes, 'self.')}), (x, x * 2))",
        f"f = [{func}(t, '{pattern}'{red}{_kwargs(axes, 'self.')}) for t in (x, -x)][1]",
    ]
    outs = "a, b, c, d, e, f"
    layers = ""
    if func != "repeat":
        layer = "Rearrange" if func == "rearrange" else "Reduce"
        layers = (
            f"\n        self.layer = {layer}('{pattern}'{red}{_kwargs(axes, 'literal')})"
            f"\n        self.seq = nn.Sequential({layer}('{pattern}'{red}{_kwargs(axes, 'literal')}), nn.Identity())"
        )
        outs += ", self.layer(x), self.seq(x)"
    body = "".join(f"\n        {line}" for line in lines)
    return f"""\
import torch
from torch import nn
import einops
from einops import rearrange, reduce, repeat
from einops.layers.torch import Rearrange, Reduce


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1)){attrs}{layers}

    def forward(self, x):
        x = x * self.w{locals_}{body}
        return {outs}
"""


def _input(kind: str, shape: tuple[int, ...]) -> np.ndarray:
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    return (0.5 + np.abs(x)).astype(np.float32) if kind == "reduce-prod" else x


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "pattern", "axes", "shape"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_r27_einops_spellings_equal_to_torch_in_both_modes(kind, pattern, axes, shape, tmp_path):
    require_module("torch")
    tmod, mmod, code = convert_pair(_source(kind, pattern, axes), tmp_path)
    assert "import torch" not in code and "map(" not in code
    errors = compare_modes(tmod.Net(), mmod.Net, [_input(kind, shape)], tmp_path)
    assert all(errors[m] <= 1e-5 for m in MODES), errors


def test_r27_einops_matrix_covers_the_issue():
    """Every reduction, repeat with new axes, ``...``, grouping and ungrouping are in the matrix."""
    kinds = {c[0] for c in CASES}
    assert {f"reduce-{r}" for r in _REDUCTIONS} <= kinds and {"rearrange", "repeat"} <= kinds
    patterns = [c[1] for c in CASES]
    assert any("..." in p for p in patterns) and any("(" in p.split("->")[0] for p in patterns)
    assert any("(" in p.split("->")[1] for p in patterns)
    assert any(c[0] == "repeat" and c[2] for c in CASES)
    for kind, pattern, axes, _ in CASES:
        compile(_source(kind, pattern, axes), "net.py", "exec")
