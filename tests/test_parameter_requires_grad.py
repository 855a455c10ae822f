"""``nn.Parameter(torch.zeros(3, requires_grad=True))``: the data's requires_grad= says nothing (the
Parameter is trainable by its own flag), so it is dropped without the review mark a bare
``torch.zeros(3, requires_grad=True)`` gets (the autograd-flag drop reason)."""

from __future__ import annotations

import pytest

from torch2ms.convert import convert_source

_HEAD = "import torch\nimport torch.nn as nn\nfrom torch.nn import Parameter\n\n"
_PARAMETERS = ["nn.Parameter", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "Parameter"]
_FACTORIES = ["torch.zeros(3, 4, {rg})", "torch.ones(2, {rg})", "torch.randn(5, {rg})", "torch.empty(2, 3, {rg})"]


def _convert(stmt: str) -> str:
    src = _HEAD + f"class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        {stmt}\n"
    res = convert_source(src, "m.py")
    assert res.error is None
    assert not [c for c in res.changes if c.action != "converted"], res.code
    return res.code


@pytest.mark.parametrize("param", _PARAMETERS)
@pytest.mark.parametrize("factory", _FACTORIES)
@pytest.mark.parametrize("rg", ["requires_grad=True", "requires_grad=False", "dtype=torch.float32, requires_grad=True"])
@pytest.mark.parametrize("data", ["positional", "keyword"])
def test_requires_grad_of_parameter_data_is_not_marked(param, factory, rg, data):
    inner = factory.format(rg=rg)
    arg = inner if data == "positional" else f"data={inner}"
    code = _convert(f"self.w = {param}({arg})")
    assert "requires_grad" not in code and "review" not in code, code
    assert "Parameter(" in code


def test_bare_factory_is_still_marked():
    src = (
        _HEAD
        + "x = torch.zeros(3, requires_grad=True)\ny = nn.Parameter(torch.zeros(3) + torch.ones(3, requires_grad=True))\n"
    )
    res = convert_source(src, "m.py")
    assert [c.api for c in res.changes if c.action == "review"] == ["torch.zeros", "torch.ones"], res.code


def test_parameter_own_requires_grad_stays():
    code = _convert("self.w = nn.Parameter(torch.zeros(3, requires_grad=True), requires_grad=False)")
    assert "Parameter(ops.zeros(3), requires_grad=False)" in code, code
