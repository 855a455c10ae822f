"""Issue 11 (R7, R27): ``F.multi_head_attention_forward`` called with a layer's own weights (an
attention pool: separate q/k/v projections, one packed bias, the mean token as the query) and with a
packed in-projection and a float mask: converted code matches torch in PyNative and GRAPH_MODE with the
weights from `torch2ms weights` alone."""

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


    class AttentionPool(nn.Module):
        def __init__(self, tokens=5, dim=8, heads=2, out=6):
            super().__init__()
            self.pos = nn.Parameter(torch.randn(tokens + 1, dim) / dim ** 0.5)
            self.q_proj = nn.Linear(dim, dim)
            self.k_proj = nn.Linear(dim, dim)
            self.v_proj = nn.Linear(dim, dim)
            self.c_proj = nn.Linear(dim, out)
            self.packed = nn.Parameter(torch.randn(3 * out, out) * 0.3)
            self.packed_bias = nn.Parameter(torch.randn(3 * out) * 0.1)
            self.out = nn.Linear(out, out)
            self.heads = heads

        def forward(self, x):
            x = x.permute(1, 0, 2)  # NLC -> LNC
            x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0) + self.pos[:, None, :]
            x, _ = F.multi_head_attention_forward(
                query=x[:1], key=x, value=x,
                embed_dim_to_check=x.shape[-1],
                num_heads=self.heads,
                q_proj_weight=self.q_proj.weight,
                k_proj_weight=self.k_proj.weight,
                v_proj_weight=self.v_proj.weight,
                in_proj_weight=None,
                in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
                bias_k=None,
                bias_v=None,
                add_zero_attn=False,
                dropout_p=0,
                out_proj_weight=self.c_proj.weight,
                out_proj_bias=self.c_proj.bias,
                use_separate_proj_weight=True,
                training=self.training,
                need_weights=False,
            )
            mask = torch.triu(torch.full((3, 3), float("-inf")), diagonal=1)
            y = x.repeat(3, 1, 1)
            y, w = F.multi_head_attention_forward(
                y, y, y, y.shape[-1], 3, self.packed, self.packed_bias, None, None, False, 0.0,
                self.out.weight, self.out.bias, training=False, attn_mask=mask,
            )
            return y.squeeze(1) if y.shape[1] == 1 else y, w
    """)


def test_r7_functional_multi_head_attention_converts_without_marks(tmp_path):
    require_module("torch")
    _, _, code = convert_pair(SOURCE, tmp_path)
    assert code.count("multi_head_attention_forward(") == 2 and "F." not in code


@pytest.mark.slow
def test_r27_functional_multi_head_attention_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    errors = compare_modes(tmod.AttentionPool(), mmod.AttentionPool, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
