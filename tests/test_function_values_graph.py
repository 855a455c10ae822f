"""Issue 24: a torch function used as a value and called in forward (detr's ``self.activation =
_get_activation_fn(activation)``, which returns ``F.relu``). Where the KB maps it to a MindSpore function that
takes the same arguments by position (its rules only drop trailing ones: ``inplace=``, ``out=``), the converter
writes that function: GRAPH_MODE compiles it, where ``TorchCompat`` (which applies the argument rules at call
time) does not. A function whose arguments are renamed or transformed, or a ``partial`` binding torch's keywords
(``partial(F.relu, inplace=True)``), stays ``TorchCompat``, marked where construct calls it, and equal to torch
in PyNative.

A generated matrix: function × how it becomes a value (returned by a module-level getter, assigned in
``__init__``, passed to a sub-module's constructor, picked from a dict, a bare ``partial``, a module-level constant), equal to torch in PyNative and
GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import convert_pair, ms_mode, relative_error
from requires_support import require_module

pytestmark = pytest.mark.differential

PLAIN = ("F.relu", "F.gelu", "F.silu", "torch.tanh", "torch.sigmoid", "F.softplus", "torch.relu", "F.hardtanh")
COMPAT = ("F.glu", "F.leaky_relu", "F.elu")
FORMS = {
    "getter": ("get_act()", ""),
    "assigned": ("{fn}", ""),
    "argument": ("act", "act={fn}"),
    "dict": ("{{'a': {fn}, 'b': None}}['a']", ""),
    "partial": ("functools.partial({fn})", ""),
    "module_constant": ("ACT", ""),
}

SOURCE = """\
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F


ACT = {fn}


def get_act():
    return {fn}


class Block(nn.Module):
    def __init__(self, act=None):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = {value}

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block({argument})

    def forward(self, x):
        return self.block(x)
"""


def _source(fn: str, form: str) -> str:
    value, argument = FORMS[form]
    return SOURCE.format(fn=fn, value=value.format(fn=fn), argument=argument.format(fn=fn))


def _run(tmp_path, fn: str, form: str, modes: tuple[str, ...]) -> str:
    torch = require_module("torch")
    ms = require_module("mindspore")
    tmod, mmod, code = convert_pair(_source(fn, form), tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32) * 3
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    weights = {k: v.numpy() for k, v in tnet.state_dict().items()}
    for mode in modes:
        with ms_mode(mode):
            mnet = mmod.Net()
            for p in mnet.get_parameters():
                p.set_data(ms.Tensor(weights[p.name]))
            assert relative_error(expected, mnet(ms.Tensor(x))) <= 1e-5, (mode, code)
    return code


@pytest.mark.parametrize(("fn", "form"), product(PLAIN, FORMS, pairs=False))
def test_function_value_is_the_mindspore_function_in_both_modes(tmp_path, fn, form):
    code = _run(tmp_path, fn, form, ("PYNATIVE_MODE", "GRAPH_MODE"))
    assert "TorchCompat" not in code, code


@pytest.mark.parametrize("fn", COMPAT)
def test_function_value_with_argument_rules_stays_torch_compat(tmp_path, fn):
    code = _run(tmp_path, fn, "assigned", ("PYNATIVE_MODE",))
    assert f'TorchCompat("{fn.replace("F.", "torch.nn.functional.")}")' in code, code


# partial binding torch's keywords: they must go through the KB's rules (TorchCompat), PyNative
BOUND = {
    "relu_inplace": "functools.partial(F.relu, inplace=True)",
    "gelu_tanh": "functools.partial(F.gelu, approximate='tanh')",
}


@pytest.mark.parametrize("bound", BOUND)
def test_function_value_bound_by_partial_stays_torch_compat(tmp_path, bound):
    code = _run(tmp_path, BOUND[bound], "assigned", ("PYNATIVE_MODE",))
    assert "functools.partial(TorchCompat(" in code, code
