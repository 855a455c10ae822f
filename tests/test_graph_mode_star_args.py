"""Issue 24 (R27): a torch function called with ``*args`` in forward went through
torch2ms.runtime.TorchCompat, whose call GRAPH_MODE cannot compile ("Unsupported statement 'Try'",
perceiver-pytorch's ``torch.meshgrid(*axis_pos, indexing='ij')``). A rule that passes its ``*name``
parameter on as written (meshgrid, rand, randn) now takes the starred names directly: the converted
call compiles, equal to torch in PyNative and GRAPH_MODE. A matrix of spellings × places; ``**kwargs``
still goes through TorchCompat and is marked for GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import MODES, compare_modes, convert_pair
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

# spelling → lines that set ``x`` from ``x`` (shape (2, 3, 4, 5)), using ``axes`` (a list of 1-D tensors)
SPELLINGS = {
    "star-list-ij": "x = x + torch.stack(torch.meshgrid(*axes, indexing='ij'), dim=-1).sum(-1)",
    "star-list-xy": "x = x + torch.stack(torch.meshgrid(*axes, indexing='xy'), dim=-1).sum(-1).transpose(0, 1)",
    "star-list-default": "x = x + torch.stack(torch.meshgrid(*axes), dim=-1).sum(-1)",
    "plain-then-star": "x = x + torch.stack(torch.meshgrid(axes[0], *axes[1:], indexing='ij'), dim=-1).sum(-1)",
    "star-tuple": "x = x + torch.stack(torch.meshgrid(*tuple(axes), indexing='ij'), dim=-1).sum(-1)",
    "star-one-tensor": "x = x + torch.meshgrid(*axes[:1], indexing='ij')[0].reshape(4, 1)",
    "star-shape-rand": "x = x + 0 * torch.rand(*x.shape)",
    "star-shape-randn": "x = x + 0 * torch.randn(*x.shape[2:])",
}
PLACES = ("forward", "helper")

TEMPLATE = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))
{helper}
    def forward(self, x):
        x = x * self.w
        axes = [torch.linspace(-1.0, 1.0, steps=s) for s in x.shape[2:]]
{body}
        return x
"""


def _source(line: str, place: str) -> str:
    if place == "forward":
        return TEMPLATE.format(helper="", body=f"        {line}")
    helper = f"\n    def helper(self, x, axes):\n        {line}\n        return x\n"
    return TEMPLATE.format(helper=helper, body="        x = self.helper(x, axes)")


@pytest.mark.slow
@pytest.mark.parametrize(("spelling", "place"), product(sorted(SPELLINGS), PLACES, pairs=False))
def test_r27_starred_call_equal_to_torch_in_both_modes(spelling, place, tmp_path):
    require_module("torch")
    tmod, mmod, code = convert_pair(_source(SPELLINGS[spelling], place), tmp_path)
    assert "TorchCompat" not in code, code
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert all(errors[m] <= 1e-5 for m in MODES), errors


@pytest.mark.parametrize("place", PLACES)
def test_r27_double_star_still_marked_for_graph_mode(place):
    res = convert_source(_source("x = x + torch.meshgrid(*axes, **{'indexing': 'ij'})[0].sum()", place), "net.py")
    assert "TorchCompat(" in res.code
    assert any("TorchCompat, which GRAPH_MODE" in c.note for c in res.changes), [c.note for c in res.changes]
