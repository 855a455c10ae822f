"""Issue 24, class 8: a persistent buffer drawn at random (segment-anything's
``register_buffer("positional_encoding_gaussian_matrix", scale * torch.randn((2, n)))``). Its values are
in torch's state dict and nowhere else; MindSpore's checkpoints hold Parameters only, so a converted
buffer kept the converted net's own random draw and the forward differed from torch's.

Such a buffer becomes a Parameter that is not trained (same name): `torch2ms weights` writes it and
``load_param_into_net`` loads it. A generated matrix of the ways code draws it (randn, scaled, rand,
randint cast, empty().normal_(), keyword and positional ``persistent=True``) in a nested module: the
converted net, weights from `torch2ms weights` alone, equals torch in PyNative and GRAPH_MODE; a
non-persistent or deterministic buffer stays a buffer.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair

pytestmark = pytest.mark.differential

DRAWS = {
    "randn": "torch.randn(2, 4)",
    "scaled_tuple": "scale * torch.randn((2, 4))",
    "rand": "torch.rand(2, 4) - 0.5",
    "randint": "torch.randint(-3, 4, (2, 4)).float()",
    "empty_normal": "torch.empty(2, 4).normal_()",
    "persistent_kw": "torch.randn(2, 4), persistent=True",
    "persistent_pos": "torch.randn(2, 4), True",
}
SOURCE = """\
import torch
import torch.nn as nn


class Encoding(nn.Module):
    def __init__(self, scale=2.0):
        super().__init__()
        self.register_buffer("gauss", {draw})
        self.register_buffer("mask", torch.tril(torch.ones(4, 4)))
        self.register_buffer("scratch", torch.zeros(4), persistent=False)

    def forward(self, x):
        coords = x @ self.gauss
        return torch.sin(coords) @ self.mask + self.scratch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 2)
        self.pe = Encoding()

    def forward(self, x):
        return self.pe(self.proj(x))
"""


@pytest.mark.parametrize("draw", DRAWS)
def test_random_persistent_buffer_is_loaded_from_the_checkpoint(tmp_path, draw):
    tmod, mmod, code = convert_pair(SOURCE.format(draw=DRAWS[draw]), tmp_path)
    assert 'insert_param_to_cell("gauss"' in code and 'register_buffer("mask"' in code, code
    import torch

    torch.manual_seed(0)
    tnet = tmod.Net()
    names = {p.name for p in mmod.Net().get_parameters()}
    assert "pe.gauss" in names and "pe.mask" not in names, names
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)
