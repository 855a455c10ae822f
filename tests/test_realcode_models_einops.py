"""Issue 11, class 3 (R6, R27): einops layers inside nn.Sequential and einops functions in forward
convert to torch2ms.runtime's einops (no einops backend needed) and match torch in PyNative and
GRAPH_MODE, with the weights from `torch2ms weights` alone."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential
require_module("einops")

SOURCE = textwrap.dedent("""\
    import torch
    from torch import nn
    import einops
    from einops import rearrange, repeat
    from einops.layers.torch import Rearrange, Reduce


    class PatchNet(nn.Module):
        def __init__(self, patch=4, dim=16, heads=2, classes=5):
            super().__init__()
            self.to_tokens = nn.Sequential(
                Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
                nn.Linear(3 * patch * patch, dim),
            )
            self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
            self.qkv = nn.Linear(dim, 3 * dim)
            self.heads = heads
            self.pool = nn.Sequential(Reduce("b n d -> b d", "mean"), nn.LayerNorm(dim))
            self.head = nn.Linear(dim, classes)

        def forward(self, img):
            x = self.to_tokens(img)
            cls = repeat(self.cls_token, "() n d -> b n d", b=x.shape[0])
            x = torch.cat([cls, x], dim=1)
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = [rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v)]
            att = (q @ k.transpose(-1, -2)).softmax(dim=-1)
            out = rearrange(att @ v, "b h n d -> b n (h d)")
            return self.head(self.pool(out)) + einops.reduce(x, "b n d -> b ()", "max")
    """)


def test_r6_einops_imports_leave_no_torch_or_einops(tmp_path):
    require_module("torch")
    _, _, code = convert_pair(SOURCE, tmp_path)
    assert "import torch" not in code and "einops" not in code.replace("torch2ms", "")
    assert "from torch2ms.runtime import" in code and "Rearrange(" in code and "rearrange(" in code


@pytest.mark.slow
def test_r27_einops_model_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.PatchNet()
    img = np.random.default_rng(0).standard_normal((2, 3, 8, 12)).astype(np.float32)
    errors = compare_modes(tnet, mmod.PatchNet, [img], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
