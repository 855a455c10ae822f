"""Issue 11, class 8 (R6, R27): a tensor attribute re-cast in place by a method forward calls.

CLIP's text transformer keeps its causal mask on each block and, in ``attention``, writes
``self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if ... else None``.
GRAPH_MODE cannot carry a tensor attribute assigned in construct (the compile fails deep inside
the next layer). The cast only changes dtype/device, so a local cast of the attribute gives the
same values on every call: the converted model matches torch in PyNative and GRAPH_MODE, with the
mask or without it. An attribute whose new value is not a cast of itself is left alone."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self, d, heads, attn_mask=None):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, heads)
            self.ln_1 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            self.ln_2 = nn.LayerNorm(d)
            self.attn_mask = attn_mask

        def attention(self, x):
            self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
            return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

        def forward(self, x):
            x = x + self.attention(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))


    class TextTower(nn.Module):
        def __init__(self, width=16, heads=2, layers=2, context=6, causal=True):
            super().__init__()
            self.context = context
            mask = self.build_attention_mask() if causal else None
            self.blocks = nn.Sequential(*[Block(width, heads, mask) for _ in range(layers)])

        def build_attention_mask(self):
            mask = torch.empty(self.context, self.context)
            mask.fill_(float("-inf"))
            mask.triu_(1)
            return mask

        def forward(self, x):
            return self.blocks(x.permute(1, 0, 2)).permute(1, 0, 2)
    """)

NOT_A_CAST = textwrap.dedent("""\
    import torch.nn as nn


    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 1.0

        def bump(self):
            self.scale = self.scale * 2

        def forward(self, x):
            self.bump()
            return x * self.scale
    """)


def test_r6_recast_attribute_becomes_a_local_cast():
    code = convert_source(SOURCE, "clip_like.py").code
    attention = code.split("def attention")[1].split("def construct")[0]
    assert "attn_mask = self.attn_mask\n" in attention and "self.attn_mask =" not in attention
    assert "attn_mask=attn_mask" in attention
    assert "self.scale = self.scale * 2" in convert_source(NOT_A_CAST, "counter.py").code


@pytest.mark.slow
@pytest.mark.parametrize("causal", [True, False])
def test_r27_block_recasting_its_mask_matches_torch_in_both_modes(tmp_path, causal):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 6, 16)).astype(np.float32)
    errors = compare_modes(tmod.TextTower(causal=causal), lambda: mmod.TextTower(causal=causal), [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
