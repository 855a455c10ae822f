"""torch.nn.Module.get_extra_state / set_extra_state: a module overriding them converts to a Cell that
does the same (MindSpore 2.10's Cell has both, and state_dict / load_state_dict call them as torch's do).

The KB entries (kb/data/nn_layers_module_utils.toml) name this file as their proof: an override is a class rewritten
whole, not a call a differential case can replay.
"""

import importlib.util

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

SRC = """\
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.scale = 2.0

    def forward(self, x):
        return self.fc(x) * self.scale

    def get_extra_state(self):
        return {"scale": self.scale}

    def set_extra_state(self, state):
        self.scale = state["scale"]
"""


def _round_trip(src, dst):
    # called with the torch modules and with the converted Cells: the same method names on both
    sd = src.state_dict()
    dst.load_state_dict(sd)
    return sorted(sd), sd["_extra_state"], dst.scale


def test_extra_state_overrides_convert_unchanged():
    res = convert_source(SRC, "scaled.py")
    assert res.error is None
    assert "class Scaled(nn.Cell):" in res.code
    assert "def get_extra_state(self):" in res.code and "def set_extra_state(self, state):" in res.code


@pytest.mark.differential
def test_extra_state_goes_through_state_dict_and_load_state_dict_like_torch(tmp_path):
    require_module("torch")
    ms = require_module("mindspore")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    (tmp_path / "scaled_ms.py").write_text(convert_source(SRC, "scaled.py").code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("scaled_ms", tmp_path / "scaled_ms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace: dict = {}
    exec(compile(SRC, "scaled.py", "exec"), namespace)

    t_src, t_dst = namespace["Scaled"](), namespace["Scaled"]()
    t_src.scale = 5.0
    m_src, m_dst = module.Scaled(), module.Scaled()
    m_src.scale = 5.0
    want = _round_trip(t_src, t_dst)
    got = _round_trip(m_src, m_dst)
    assert got == want == (["_extra_state", "fc.bias", "fc.weight"], {"scale": 5.0}, 5.0)
    x = np.ones((1, 3), "float32")
    m_dst.fc.weight.set_data(ms.Tensor(t_dst.fc.weight.detach().numpy()))
    m_dst.fc.bias.set_data(ms.Tensor(t_dst.fc.bias.detach().numpy()))
    import torch

    np.testing.assert_allclose(m_dst(ms.Tensor(x)).asnumpy(), t_dst(torch.tensor(x)).detach().numpy(), rtol=1e-6)
