"""Issue 11 (R7, R27): Module state MindSpore's Cell treats differently from torch's Module.

A registered buffer assigned a new tensor outside ``forward`` (torch replaces the buffer; MindSpore's
Cell raises "Buffer already exists") and moved to the input's device inside ``forward``
(``self.buf = self.buf.to(x.device)``), and a complex buffer (a RoPE table, which a MindSpore
checkpoint cannot hold: `torch2ms weights` leaves it out, the network computes it): converted code matches torch in PyNative and GRAPH_MODE with
the weights from `torch2ms weights` alone."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair

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
    pytest.importorskip("torch")
    _, mmod, code = convert_pair(BUFFERS, tmp_path)
    assert 'self.register_buffer("angles", table(self.n, self.d), persistent=False)' in code
    assert "self.angles = self.angles" not in code
    net = mmod.Net()
    assert float(net.scale.asnumpy()[0]) == 0.5 and net.angles.shape == (8, 3)


@pytest.mark.slow
def test_r27_reassigned_buffer_matches_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(BUFFERS, tmp_path)
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors
