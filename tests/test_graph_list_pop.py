"""Issue 24: ``xs.pop()`` inside a larger expression where GRAPH_MODE compiles (guided-diffusion's UNet:
``h = th.cat([h, hs.pop()], dim=1)``). MindSpore 2.10's GRAPH_MODE gives such a pop the value
``(list, item)``; the converter takes each pop onto its own line before the statement, in Python's order.

A generated matrix: each spelling (in a list literal in a loop, in an operator, ``pop(0)``, two pops in one
statement, as a call argument, in ``return``, in ``+=``, in a tuple) × where it sits (forward, a method
forward calls, a nested module's forward), equal to torch in PyNative and GRAPH_MODE. Pops that may run
zero or many times (a comprehension, a conditional expression) or whose list is read elsewhere in the
statement stay as written.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import compare_modes, convert_pair
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

# spelling → statements of a body that starts with ``hs`` = three tensors derived from x (float32 [2, 4])
SPELLINGS = {
    "cat_in_loop": "for m in self.layers:\n    x = torch.cat([x, hs.pop()], dim=1)[:, :4]\nreturn x",
    "operator": "y = x * 2 + hs.pop()\nreturn y - hs.pop()",
    "pop_index": "y = hs.pop(0) * 3 + x\nreturn y + hs[0]",
    "two_pops": "y = hs.pop() - hs.pop(0)\nreturn y * hs[0]",
    "call_argument": "return self.layers[0](hs.pop()) + hs.pop(1)",
    "return": "return x + hs.pop()",
    "augmented": "y = x * 1\ny += hs.pop()\ny -= hs.pop(0)\nreturn y",
    "tuple": "a, b = hs.pop(), hs.pop()\nreturn a * 2 + b",
}
PLACES = ("forward", "helper", "nested")

SOURCE = """\
import torch
import torch.nn as nn


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def body(self, x):
        hs = []
        for m in self.layers:
            x = m(x)
            hs.append(x)
        hs.append(torch.tanh(x))
{helper}

    def forward(self, x):
{inner}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def body(self, x):
        hs = []
        for m in self.layers:
            x = m(x)
            hs.append(x)
        hs.append(torch.tanh(x))
{helper}

    def forward(self, x):
{outer}
"""


def _indent(code: str, n: int) -> str:
    return "\n".join(" " * n + line for line in code.splitlines())


def _source(spelling: str, place: str) -> str:
    body = _indent(SPELLINGS[spelling], 8)
    fields = {"helper": body, "inner": "        return x", "outer": "        return self.body(x)"}
    if place == "forward":
        # forward itself holds the list and its pops
        fields["outer"] = _indent("hs = [self.layers[0](x), self.layers[1](x), torch.tanh(x)]", 8) + "\n" + body
    elif place == "nested":
        fields["inner"] = "        return self.body(x)"
        fields["outer"] = "        return self.inner(x) * 2"
    return SOURCE.format(**fields)


@pytest.mark.parametrize(("spelling", "place"), product(SPELLINGS, PLACES, pairs=False))
def test_list_pop_in_expressions_equals_torch(tmp_path, spelling, place):
    tmod, mmod, code = convert_pair(_source(spelling, place), tmp_path)
    assert "_t2m_pop = hs" in code, code
    torch = require_module("torch")
    torch.manual_seed(0)
    tnet = tmod.Net()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)


@pytest.mark.parametrize(
    "line",
    [
        "y = hs.pop()",  # alone: compiles as it is
        "hs.pop()",
        "y = [hs.pop() for _ in range(2)]",  # runs many times
        "y = hs.pop() if flag else x",  # may not run
        "y = flag and hs.pop()",
        "y = len(hs) + hs.pop()",  # the list read before the pop
    ],
)
def test_pops_whose_order_could_change_stay(line):
    source = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x, hs, flag):\n"
    source += f"        {line}\n        return x\n"
    code = convert_source(source).code
    assert "_t2m_pop" not in code and line in code, code
