"""Issue 11, class 4 (R7, R27): ``torch.Tensor(n)`` with one argument whose type the converter
cannot know (a parameter of ``__init__``): a size when it is an int, data otherwise.

A graph convolution written the 2017 way (``nn.Parameter(torch.Tensor(out_dim))`` then
``nn.init.zeros_``, ``torch.spmm`` on a dense adjacency): the converted layer has torch's shapes,
takes the weights from `torch2ms weights` alone and matches torch in PyNative and GRAPH_MODE. The
same helper keeps data as data (a tuple held in an attribute, in forward too)."""

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
    import torch.nn.functional as F


    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super().__init__()
            self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(torch.Tensor(output_dim))
                nn.init.uniform_(self.bias)

        def forward(self, x, adj):
            out = torch.spmm(adj, torch.mm(x, self.kernel))
            if self.bias is not None:
                out = out + self.bias
            return out


    class GCN(nn.Module):
        def __init__(self, i, h, o, scales=(0.5, 2.0)):
            super().__init__()
            self.gc1 = GraphConv(i, h, use_bias=True)
            self.gc2 = GraphConv(h, o, use_bias=True)
            self.scales = torch.Tensor(list(scales))
            self.shift = scales

        def forward(self, x, adj):
            x = F.relu(self.gc1(x, adj)) * self.scales[0] + torch.Tensor(self.shift).sum()
            return F.log_softmax(self.gc2(x, adj), dim=1) * self.scales[1]
    """)


def test_r7_legacy_tensor_of_unknown_argument_is_decided_at_run_time(tmp_path):
    require_module("torch")
    tmod, mmod, code = convert_pair(SOURCE, tmp_path)
    assert "legacy_tensor(output_dim, ms.float32)" in code and "ops.zeros((input_dim, output_dim,)" in code
    assert "legacy_tensor(self.shift, ms.float32)" in code
    tnet, mnet = tmod.GCN(16, 8, 4), mmod.GCN(16, 8, 4)
    shapes = {k: tuple(v.shape) for k, v in tnet.state_dict().items()}
    assert {p.name: tuple(p.shape) for p in mnet.get_parameters()} == shapes
    assert mnet.scales.asnumpy().tolist() == tnet.scales.tolist() == [0.5, 2.0]


@pytest.mark.slow
def test_r27_graph_conv_with_legacy_bias_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    adj = rng.uniform(size=(6, 6)).astype(np.float32)
    errors = compare_modes(tmod.GCN(16, 8, 4), lambda: mmod.GCN(16, 8, 4), [x, adj], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
