"""Issue 11 (R7, R21, R27): weight normalization, which MindSpore has no hook or parametrization for.

``nn.utils.weight_norm`` (Linear, Conv1d with ``dim=None``, a Conv2d over ``dim=1``) and
``nn.utils.parametrizations.weight_norm`` become ``torch2ms.runtime`` helpers that keep torch's
parameter names (``weight_g`` / ``weight_v``, ``parametrizations.weight.original0/1``) and shapes: the
weights from `torch2ms weights` alone load, and the converted net matches torch in PyNative and
GRAPH_MODE with g and v that are not each other's norm."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.nn.utils import weight_norm
    from torch.nn.utils.parametrizations import weight_norm as param_weight_norm


    class Net(nn.Module):
        def __init__(self, c=4, hidden=6, out=3, frozen=True):
            super().__init__()
            self.conv = weight_norm(nn.Conv1d(c, hidden, 3, padding=1), dim=None)
            self.conv2 = nn.utils.weight_norm(nn.Conv2d(1, 2, 3, padding=1), name="weight", dim=1)
            self.proj = param_weight_norm(nn.Linear(hidden, hidden))
            self.head = nn.utils.weight_norm(nn.Linear(hidden, out, bias=False))
            self.head.weight_g.data.fill_(1)
            if frozen:
                self.head.weight_g.requires_grad = False

        def forward(self, x):
            h = torch.relu(self.conv(x))
            h = self.conv2(h.unsqueeze(1)).mean(dim=1)
            h = self.proj(h.mean(dim=-1))
            return self.head(nn.functional.normalize(h, dim=-1, p=2))
    """)


def test_r7_weight_norm_converts_without_marks(tmp_path):
    require_module("torch")
    _, mmod, code = convert_pair(SOURCE, tmp_path)
    assert "weight_norm(ms.nn.Conv1d(" in code or "weight_norm(nn.Conv1d(" in code
    assert "parametrized_weight_norm(" in code
    names = sorted(n for n, _ in mmod.Net().parameters_and_names())
    assert "head.weight_g" in names and "proj.parametrizations.weight.original1" in names, names


@pytest.mark.slow
def test_r27_weight_norm_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net()
    with torch.no_grad():  # g no longer the norm of v: a wrong norm axis or a g/v swap shows
        for p in tnet.parameters():
            p.mul_(torch.rand_like(p) + 0.5)
    assert sorted(tnet.state_dict()) == sorted(n for n, _ in mmod.Net().parameters_and_names())
    x = np.random.default_rng(0).standard_normal((2, 4, 7)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
