"""Issue 11, class 4 (R7, R27): arguments whose MindSpore form is only known at run time.

A 2-tuple padding of expressions, a padding held in a name (int, tuple or 'same'), a scale factor
held in an attribute and a fractional bicubic scale, layers subclassed and built with torch's
positional arguments (``super().__init__(i, o, bias, device, dtype)``, ``Conv1d(..., padding=1)``),
a mixin calling ``super(Mixin, self).forward``, and the size form of ``torch.Tensor(i, o)``:
converted code matches torch in PyNative and GRAPH_MODE with the weights from `torch2ms weights`."""

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


    class Bottle(nn.Module):
        def forward(self, x):
            if len(x.size()) <= 2:
                return super(Bottle, self).forward(x)
            n, t = x.size()[:2]
            return super(Bottle, self).forward(x.view(n * t, -1)).view(n, t, -1)


    class TimeLinear(Bottle, nn.Linear):
        pass


    class Dense(nn.Linear):
        def __init__(self, i, o, bias=True, device=None, dtype=None):
            super().__init__(i, o, bias, device, dtype)
            self.extra = nn.Parameter(torch.Tensor(o, i))
            nn.init.xavier_uniform_(self.extra)

        def forward(self, x):
            return super().forward(x) + F.linear(x, self.extra)


    class Conv1d(nn.Conv1d):
        pass


    class Net(nn.Module):
        def __init__(self, c=3, k=3, up=2, pad=(1, 2), same="same"):
            super().__init__()
            p = k // 2
            self.a = nn.Conv2d(c, 4, k, padding=(p, p))
            self.b = nn.Conv2d(4, 4, k, padding=pad)
            self.c = nn.Conv2d(4, 4, k, padding=same)
            self.up = up
            self.seq = Conv1d(4, 6, kernel_size=3, padding=1)
            self.time = TimeLinear(6, 5)
            self.dense = Dense(5, 3, False)

        def forward(self, x):
            x = self.c(self.b(self.a(x)))
            x = F.interpolate(x, mode="nearest", scale_factor=self.up)
            x = F.interpolate(x, scale_factor=(6.1 / 8, 6.1 / 8), mode="bicubic")
            s = self.seq(x.mean(dim=2))
            return self.dense(self.time(s.transpose(1, 2).contiguous()))
    """)


def test_r7_run_time_arguments_leave_no_marks(tmp_path):
    require_module("torch")
    _, _, code = convert_pair(SOURCE, tmp_path)
    assert "padding=(p, p, p, p)" in code and "conv_padding(pad, 2)" in code
    assert 'interpolate(x, scale_factor=self.up, mode="nearest")' in code
    assert ".construct(x)" in code and 'compat_base("torch.nn.Linear")' in code
    assert "ops.zeros((o, i,), ms.float32)" in code


@pytest.mark.slow
def test_r27_run_time_arguments_match_torch_in_both_modes(tmp_path):
    import torch

    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net()
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


SELF_TRAINING = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.optim import Adam


    class Layer(nn.Linear):
        def __init__(self, i, o, bias=True, device=None, dtype=None):
            super().__init__(i, o, bias, device, dtype)
            self.relu = nn.ReLU()
            self.opt = Adam(self.parameters(), lr=0.03)

        def forward(self, x):
            x = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(torch.mm(x, self.weight.T) + self.bias.unsqueeze(0))
    """)


@pytest.mark.slow
def test_r27_layer_holding_its_own_optimizer_keeps_torch_parameter_names(tmp_path):
    """A MindSpore optimizer assigned to a Cell attribute would become a sub-cell and rename the
    parameters it holds (weight → opt.weight): the converted layer keeps it as a plain attribute."""
    import torch

    tmod, mmod, _ = convert_pair(SELF_TRAINING, tmp_path)
    mnet = mmod.Layer(6, 4)
    assert [n for n, _ in mnet.parameters_and_names()] == ["weight", "bias"]
    assert len(mnet.opt.parameters) == 2  # the optimizer still holds the layer's parameters
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    errors = compare_modes(tmod.Layer(6, 4), lambda: mmod.Layer(6, 4), [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


NUMPY_SCALARS = textwrap.dedent("""\
    import numpy as np
    import torch
    import torch.nn as nn


    def sinusoids(length, channels, max_timescale=10000):
        step = np.log(max_timescale) / (channels // 2 - 1)
        inv = torch.exp(-step * torch.arange(channels // 2))
        t = torch.arange(length)[:, np.newaxis] * inv[np.newaxis, :]
        return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


    class Encoder(nn.Module):
        def __init__(self, n=6, d=8):
            super().__init__()
            self.register_buffer("pos", sinusoids(n, d))
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            return self.proj(x + self.pos)
    """)


@pytest.mark.slow
def test_r27_numpy_scalar_times_tensor_stays_a_tensor(tmp_path):
    """np.float64 * MindSpore Tensor is an ndarray unless the Tensor class has torch's
    __array_priority__: the converted module imports the runtime helper that sets it."""
    import torch

    tmod, mmod, code = convert_pair(NUMPY_SCALARS, tmp_path)
    assert "import numpy_defers_to_tensors" in code and "__array_priority__" not in code
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 6, 8)).astype(np.float32)
    errors = compare_modes(tmod.Encoder(), mmod.Encoder, [x], tmp_path)
    assert errors["PYNATIVE_MODE"] <= 1e-5 and errors["GRAPH_MODE"] <= 1e-5, errors


@pytest.mark.slow
def test_r27_numpy_scalars_defer_without_the_module_top_level_running(tmp_path):
    """A loader that keeps only a module's imports and definitions (as a user importing one class
    gets them, or the real-code kit's slicer): the imports alone make np.float64 * Tensor a Tensor.
    A fresh process, so no earlier import has set the priority."""
    import ast
    import os
    import subprocess
    import sys

    _, _, code = convert_pair(NUMPY_SCALARS, tmp_path)
    tree = ast.parse(code)
    tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef))]
    (tmp_path / "sliced.py").write_text(ast.unparse(tree))
    check = (
        "import mindspore as ms, sliced; pos = sliced.sinusoids(6, 8)\n"
        "assert isinstance(pos, ms.Tensor), type(pos); print(pos.shape)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "GLOG_v": "3"}
    run = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and "(6, 8)" in run.stdout, run.stderr[-2000:]
