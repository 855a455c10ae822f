"""Issue 24, class 3: torch's LayerNorm without parameters (``bias=False``, torch >= 2.1, and
``elementwise_affine=False``) and nanoGPT's ``F.layer_norm(x, shape, self.weight, self.bias)`` with
``self.bias`` None at run time.

A generated matrix of spellings (where the flag comes from: a literal, positionally, a constructor
argument, ``functools.partial``, a subclass's ``super().__init__``; which flags) is converted, built
and run against torch in PyNative and GRAPH_MODE with weights from `torch2ms weights` alone; the
converted layer has exactly torch's parameters (no beta a torch checkpoint lacks).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import compare_modes as compare_models_modes
from rc_models_support import convert_pair

pytestmark = pytest.mark.differential

FLAGS = {
    "bias": "bias=False",
    "affine": "elementwise_affine=False",
    "both": "elementwise_affine=False, bias=False",
    "true": "elementwise_affine=True, bias=True",
}
# How the call reaches the flags: {flags} is one of FLAGS, {pos} the same flags positionally.
SPELLINGS = {
    "keyword": ("nn.LayerNorm(8, {flags})", ""),
    "positional": ("nn.LayerNorm([8], 1e-5, {pos})", ""),
    "ctor_arg": ("nn.LayerNorm(8, **flags)", ""),
    "partial": ("norm_layer(8)", "norm_layer = partial(nn.LayerNorm, {flags})"),
    "subclass": ("MyNorm(8)", ""),
}
SOURCE = """\
from functools import partial
import torch
import torch.nn as nn


class MyNorm(nn.LayerNorm):
    def __init__(self, n):
        super().__init__(n, {flags})


class Net(nn.Module):
    def __init__(self, flags=dict({flags})):
        super().__init__()
        {setup}
        self.fc = nn.Linear(8, 8)
        self.norm = {layer}

    def forward(self, x):
        return self.norm(self.fc(x))
"""


def _positional(flags: str) -> str:
    values = dict(kv.split("=") for kv in flags.split(", "))
    return f"{values.get('elementwise_affine', 'True')}, {values.get('bias', 'True')}"


@pytest.mark.parametrize(("spelling", "flag"), product(SPELLINGS, FLAGS, pairs=False))
def test_layernorm_without_parameters_matches_torch_in_both_modes(tmp_path, spelling, flag):
    import torch

    layer, setup = SPELLINGS[spelling]
    flags = FLAGS[flag]
    source = SOURCE.format(
        flags=flags, layer=layer.format(flags=flags, pos=_positional(flags)), setup=setup.format(flags=flags) or "pass"
    )
    tmod, mmod, code = convert_pair(source, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net()
    with torch.no_grad():  # torch's default ones/zeros would hide a parameter that is not carried over
        for p in tnet.norm.parameters():
            p.add_(torch.randn_like(p))
    ms_names = sorted(p.name for p in mmod.Net().get_parameters())
    torch_names = sorted(tnet.state_dict())
    assert len(ms_names) == len(torch_names), (ms_names, torch_names, code)
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)


def compare_modes(tnet, build_ms, inputs, tmp_path):
    """Relative error per mode; the weights by `torch2ms weights --net` (a LayerNorm without bias has a lone
    1-D ``weight``: only the converted net says that it is a LayerNorm's gamma)."""
    import torch

    from torch2ms.weights.convert import convert_checkpoint

    def weights_with_net(tnet, tmp):
        pth, ckpt = tmp / "w.pth", tmp / "w.ckpt"
        torch.save(tnet.state_dict(), pth)
        assert convert_checkpoint(pth, ckpt, net=build_ms()).written
        return ckpt

    return compare_models_modes(tnet, build_ms, inputs, tmp_path, weights=weights_with_net)


NANOGPT = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.nn import functional as F


    class LayerNorm(nn.Module):
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


    class Net(nn.Module):
        def __init__(self, bias):
            super().__init__()
            self.ln = LayerNorm(6, bias)
            self.ln_f = LayerNorm(6, bias=bias)

        def forward(self, x):
            return self.ln_f(self.ln(x) * 2.0)
    """)


@pytest.mark.parametrize("bias", [True, False])
def test_functional_layer_norm_with_a_bias_none_at_run_time(tmp_path, bias):
    import torch

    tmod, mmod, _ = convert_pair(NANOGPT, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net(bias)
    with torch.no_grad():
        for p in tnet.parameters():
            p.add_(torch.randn_like(p))
    x = np.random.default_rng(0).standard_normal((2, 3, 6)).astype(np.float32)
    errors = compare_modes(tnet, lambda: mmod.Net(bias), [x], tmp_path)
    assert max(errors.values()) <= 1e-5, errors
