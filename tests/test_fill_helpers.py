"""A function of the file that fills its argument item by item (constructs/fill_helpers.py): it returns what it
fills and each call takes it back, since a compiled MindSpore graph drops a callee's item assignment (the caller's
tensor keeps its zeros, with no error). Where the rewrite is not sure, the code stays as it was."""

from __future__ import annotations

import pytest
from matrix_support import converted_trains_like_torch
from requires_support import require_module

from torch2ms.convert import convert_source

HEAD = "import torch\nimport torch.nn as nn\n\n\n"


def _convert(body: str) -> str:
    return convert_source(HEAD + body).code


def test_a_bare_return_and_the_end_return_what_was_filled():
    out = _convert(
        "def fill(a, b, v):\n"
        "    a[0] = v\n"
        "    if v.sum() > 0:\n"
        "        return\n"
        "    b[0] = v\n"
        "\n\n"
        "x = torch.zeros(2, 3)\n"
        "y = torch.zeros(2, 3)\n"
        "fill(x, y, torch.ones(3))\n"
    )
    assert "        return a, b\n" in out and "    b[0] = v\n    return a, b\n" in out, out
    assert "x, y = fill(x, y, ops.ones(3))" in out, out


@pytest.mark.parametrize(
    "body",
    [
        # the call's value is used: no statement of its own
        "def fill(a, v):\n    a[0] = v\n\n\nx = torch.zeros(2, 3)\nprint(fill(x, torch.ones(3)))\n",
        # a decorator may need the function as it is
        "import functools\n\n\n@functools.lru_cache\ndef fill(a, v):\n    a[0] = v\n\n\nfill(torch.zeros(2), 1.0)\n",
        # it returns a value of its own
        "def fill(a, v):\n    a[0] = v\n    return v\n\n\nx = torch.zeros(2, 3)\nfill(x, torch.ones(3))\n",
        # the filled argument is no plain name
        "def fill(a, v):\n    a[0] = v\n\n\nx = [torch.zeros(2, 3)]\nfill(x[0], torch.ones(3))\n",
        # it rebinds its parameter: it fills a tensor of its own
        "def fill(a, v):\n    a = a.clone()\n    a[0] = v\n\n\nx = torch.zeros(2, 3)\nfill(x, torch.ones(3))\n",
    ],
    ids=["value-used", "decorated", "returns", "not-a-name", "rebound"],
)
def test_left_as_it_is_where_not_sure(body):
    out = _convert(body)
    assert "= fill(" not in out and "    return a\n" not in out, out


def test_a_training_function_filling_a_dict_is_left_as_it_is():
    out = _convert(
        "def train(model, norms):\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(2):\n"
        "        opt.zero_grad()\n"
        "        loss = model(torch.ones(1, 3)).sum()\n"
        "        loss.backward()\n"
        "        norms[step] = loss.item()\n"
        "        opt.step()\n"
        "\n\n"
        "norms = {}\n"
        "train(nn.Linear(3, 1), norms)\n"
    )
    assert "norms = train(" not in out and "return norms" not in out, out


FORWARD = """import torch
import torch.nn as nn


def fill(buf, h):
    for i in range(buf.shape[0]):
        buf[i] = h[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.Linear(3, 3), nn.Linear(3, 1)

    def forward(self, x):
        buf = torch.zeros(4, 3)
        fill(buf, self.enc(x))
        return self.dec(buf)


torch.manual_seed(0)
X, Y = torch.randn(12, 3), torch.randn(12, 1)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = X[step * 4:step * 4 + 4], Y[step * 4:step * 4 + 4]
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_a_model_s_forward_filling_through_a_function_trains_as_torch(tmp_path, mode):
    """The fill inside the model's forward, compiled (the TrainStep's @jit, GRAPH_MODE's construct): without the
    rewrite ``buf`` stays zeros there and the encoder gets no gradient."""
    require_module("torch")
    require_module("mindspore")
    rep = converted_trains_like_torch(tmp_path, FORWARD, mode)
    out = (tmp_path / "c" / "out" / "train.py").read_text()
    assert "buf = fill(buf, self.enc(x))" in out and "    return buf\n" in out, out
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
