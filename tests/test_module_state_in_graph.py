"""Issue 24: a Module's own state read where GRAPH_MODE compiles.

- ``self.parameters()`` in forward, in a method forward calls, in a property forward reads, in a nested
  module's forward (guided-diffusion's ``checkpoint(self._forward, (x,), self.parameters(), flag)``, whisper's
  ``next(self.parameters()).dtype``): MindSpore compiles no ``get_parameters()`` call in construct; the
  converter reads ``self._t2m_parameters`` (a class-level descriptor of the runtime, ``CellParameters``) there.
- ``self._modules[...]`` (PyTorch-VAE's GammaVAE): ``self._cells`` in MindSpore.

A generated matrix: each spelling × where it sits (forward / a helper method / a property / a nested
module), equal to torch in PyNative and GRAPH_MODE with the weights from ``torch2ms weights``. Outside the
compiled methods (``__init__``, an optimizer's setup) ``self.parameters()`` keeps the KB's form.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

# spelling → an expression of x (float32 [2, 4]) and self
SPELLINGS = {
    "next_dtype": "x.to(next(self.parameters()).dtype) * 2",
    "next_value": "x + next(self.parameters())[0]",
    "count": "x * sum(p.numel() for p in self.parameters())",
    "list_index": "x + list(self.parameters())[1]",
    "loop": "self._loop(x)",
    "argument": "checkpoint(self._fwd, (x,), self.parameters(), False)",
    "modules_key": "self._modules['body'](x)",
    "modules_loop": "self._seq(x)",
}
# where it sits: the top module's forward, a method its forward calls, a nested module's forward
PLACES = ("forward", "helper", "nested")
# a property forward reads: property body → how forward uses it
PROPERTIES = {
    "dtype": ("next(self.parameters()).dtype", "x.to(dtype=self.value)"),
    "count": ("sum(p.numel() for p in self.parameters())", "x * self.value"),
    "first": ("next(self.parameters())", "x + self.value[0]"),
}

SOURCE = """\
import torch
import torch.nn as nn


def checkpoint(func, inputs, params, flag):
    if flag:
        return func(*inputs, *params)
    return func(*inputs)


class Parts(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.seq = nn.ModuleList([nn.Linear(4, 4), nn.Tanh()])

    def _fwd(self, x):
        return self.body(x)

    def _loop(self, x):
        for p in self.parameters():
            x = x + p.sum()
        return x

    def _seq(self, x):
        for m in self._modules["seq"]:
            x = m(x)
        return x

    def helper(self, x):
        return {helper}

    @property
    def value(self):
        return {prop}

    def forward(self, x):
        return {forward}


class Block(Parts):
    pass


class Net(Parts):
    def __init__(self):
        super().__init__()
        self.inner = Block()
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        return self.out(self.inner(x) + {top})
"""


def _source(place: str, expr: str = "x", prop: str = "0", forward: str = "x") -> str:
    fields = {"helper": "x", "prop": prop, "forward": forward, "top": "x"}
    if place == "helper":
        fields.update(helper=expr, top="self.helper(x)")
    elif place == "nested":
        fields.update(forward=expr)
    else:
        fields.update(top=expr)
    return SOURCE.format(**fields)


def _check(tmp_path, source: str) -> None:
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert "self._t2m_parameters" in code or "self._cells[" in code, code  # (GRAPH_MODE below proves the rest)
    torch = require_module("torch")
    torch.manual_seed(0)
    tnet = tmod.Net()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)


@pytest.mark.parametrize(("spelling", "place"), product(SPELLINGS, PLACES, pairs=False))
def test_module_state_where_graph_mode_compiles_equals_torch(tmp_path, spelling, place):
    _check(tmp_path, _source(place, SPELLINGS[spelling]))


@pytest.mark.parametrize(("spelling", "place"), product(PROPERTIES, PLACES, pairs=False))
def test_parameters_in_a_property_forward_reads_equal_torch(tmp_path, spelling, place):
    prop, use = PROPERTIES[spelling]
    _check(tmp_path, _source(place, use, prop=prop))


INIT_AND_SETUP = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.n = sum(p.numel() for p in self.parameters())

    def configure(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def forward(self, x):
        return self.fc(x).to(next(self.parameters()).dtype)
"""


def test_parameters_outside_compiled_methods_keep_the_kb_form():
    from torch2ms.convert import convert_source

    code = convert_source(INIT_AND_SETUP, "net.py").code
    init, rest = code.split("def configure")
    assert "self.get_parameters()" in init, code
    assert "_t2m_parameters" not in rest.split("def construct")[0], code
    assert "self._t2m_parameters[0]" in rest.split("def construct")[1], code
    assert code.count("_t2m_parameters = CellParameters()") == 1, code
