"""Issue 11 (R7, R27): Module state MindSpore's Cell treats differently from torch's Module.

A registered buffer assigned a new tensor outside ``forward`` (torch replaces the buffer; MindSpore's
Cell raises "Buffer already exists") and moved to the input's device inside ``forward``
(``self.buf = self.buf.to(x.device)``), and a complex buffer (a RoPE table, which a MindSpore
checkpoint cannot hold: `torch2ms weights` leaves it out, the network computes it), a sparse
buffer (MindSpore's buffers are dense: kept as a plain attribute): converted code matches torch in PyNative and GRAPH_MODE with
the weights from `torch2ms weights` alone."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

BUFFERS = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    def table(n, d, base=10000.0):
        inv = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))
        return torch.outer(torch.arange(n).float(), inv)


    class Net(nn.Module):
        def __init__(self, n=8, d=6):
            super().__init__()
            self.n, self.d = n, d
            self.proj = nn.Linear(d // 2, d)
            self.register_buffer("angles", torch.zeros(n, d // 2), persistent=False)
            self.register_buffer("scale", torch.ones(d))
            self.register_buffer("rot", torch.polar(torch.ones(n, d // 2), table(n, d)))  # complex64
            heads = torch.zeros(n, d, dtype=torch.bool)
            heads[n // 2 :] = True
            self.register_buffer("heads", heads.to_sparse(), persistent=False)
            self.reset()

        def reset(self):
            self.angles = table(self.n, self.d)
            if self.scale is not None:
                self.scale = torch.full((self.d,), 0.5)

        def forward(self, x):
            self.angles = self.angles.to(x.device)
            a = self.angles[: x.shape[1]]
            r = torch.view_as_real(self.rot[: x.shape[1]]).sum(dim=-1)
            return self.proj(torch.sin(a) * x + r) * self.scale
    """)


def test_r7_reassigned_buffer_is_registered_again(tmp_path):
    require_module("torch")
    tmod, mmod, code = convert_pair(BUFFERS, tmp_path)
    assert 'self.register_buffer("angles", table(self.n, self.d), persistent=False)' in code
    assert "self.angles = self.angles" not in code
    net = mmod.Net()
    assert float(net.scale.asnumpy()[0]) == 0.5 and net.angles.shape == (8, 3)
    # a sparse buffer: MindSpore buffers are dense, so it is a plain attribute with torch's values
    assert 'plain_attribute(self, "heads", heads.to_coo())' in code
    expected = tmod.Net().heads.coalesce().indices().numpy().T  # (nnz, 2), as MindSpore's COO indices
    np.testing.assert_array_equal(np.sort(net.heads.indices.asnumpy(), axis=0), np.sort(expected, axis=0))


@pytest.mark.slow
def test_r27_reassigned_buffer_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(BUFFERS, tmp_path)
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


CHAINS = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Pool(nn.Module):
        def __init__(self, d, out):
            super().__init__()
            self.c_proj = nn.Linear(d, out)
            self.norm = nn.LayerNorm(out)

        def forward(self, x):
            return self.norm(self.c_proj(x))


    class Wide(nn.Module):
        def __init__(self, d, out):
            super().__init__()
            self.pool = Pool(d, out)
            self.emb = nn.Embedding(10, d)

        def forward(self, x):
            return self.pool(x)


    class Narrow(nn.Module):
        def __init__(self, d, out):
            super().__init__()
            self.emb = nn.Embedding(10, d)

        def forward(self, x):
            return x


    class Net(nn.Module):
        def __init__(self, d=6, out=4, wide=True):
            super().__init__()
            if wide:
                self.visual = Wide(d, out)
            else:
                self.visual = Narrow(d, out)
            std = self.visual.pool.c_proj.in_features ** -0.5
            nn.init.normal_(self.visual.pool.c_proj.weight, std=std)
            self.width = self.visual.pool.c_proj.out_features + self.visual.pool.norm.normalized_shape[0]

        def forward(self, x):
            y = self.visual(x) * self.visual.pool.norm.weight + self.visual.pool.norm.bias
            return y + self.visual.emb.weight[:1, : self.width - 4]
    """)


def test_r7_layer_attributes_read_through_module_chains_take_mindspore_names(tmp_path):
    require_module("torch")
    _, mmod, code = convert_pair(CHAINS, tmp_path)
    assert "self.visual.pool.c_proj.in_channels ** -0.5" in code
    assert "self.visual.pool.c_proj.out_channels" in code
    assert "self.visual.pool.norm.gamma + self.visual.pool.norm.beta" in code
    assert "self.visual.emb.embedding_table[" in code
    assert mmod.Net().width == 8


@pytest.mark.slow
def test_r27_layer_attributes_through_module_chains_match_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(CHAINS, tmp_path)
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


FILLED_LATER = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.norm = RMSNorm(dim)
            self.w = nn.Linear(dim, dim, bias=False)

        def forward(self, x):
            return x + self.w(self.norm(x))


    class Net(nn.Module):
        def __init__(self, dim=8, n=3):
            super().__init__()
            self.layers = nn.ModuleList()
            for _ in range(n - 1):
                self.layers.append(Block(dim))
            self.layers.extend([Block(dim)])
            self.norm = RMSNorm(dim)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.norm(x)
    """)


def test_r21_modules_appended_to_an_empty_list_keep_torch_names(tmp_path):
    require_module("torch")
    tmod, mmod, code = convert_pair(FILLED_LATER, tmp_path)
    assert "self.layers = ModuleList()" in code
    names = sorted(p.name for p in mmod.Net().get_parameters())  # the names a checkpoint is loaded by
    assert names == sorted(tmod.Net().state_dict()), names


@pytest.mark.slow
def test_r27_modules_appended_to_an_empty_list_match_torch_in_both_modes(tmp_path):
    """Also: an RMSNorm's lone 1-D weight keeps its name in `torch2ms weights` (not LayerNorm's gamma)."""
    import torch

    tmod, mmod, _ = convert_pair(FILLED_LATER, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net()
    with torch.no_grad():
        for p in tnet.parameters():
            p.mul_(torch.rand_like(p) + 0.5)
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
