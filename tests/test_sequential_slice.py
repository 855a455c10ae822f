"""Issue 24: a slice of a Module's own ``nn.Sequential`` / ``nn.ModuleList`` inside forward (guided-diffusion's
ResBlock: ``in_rest, in_conv = self.in_layers[:-1], self.in_layers[-1]``). MindSpore answers the slice with a
new container that renames the parameters it holds; in GRAPH_MODE a model with two such blocks stops with a
duplicate parameter name, in PyNative the model's parameter names change as it runs. The converter takes the
slice as a tuple of the same cells and calls it with ``call_cells``.

A generated matrix: slice spellings × container (Sequential, ModuleList → CellList, a user subclass of
Sequential) × use (call the slice, call a local it was assigned to, loop over it, index into it) × one block in forward or two
blocks in a method forward calls, equal to torch in PyNative and GRAPH_MODE, the parameter names torch's after both runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import covering
from rc_models_support import compare_modes, convert_pair
from requires_support import CORPUS, require_kit, require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SLICES = {"tail": "1:", "head": ":-1", "variables": "i:j", "step": "::2", "negative": "-3:-1"}
CONTAINERS = {"Sequential": "nn.Sequential", "ModuleList": "nn.ModuleList", "subclass": "Seq"}
# use → body of Block.forward; S is the slice, x the input
USES = {
    "call": "y = self.layers[S](x)\nreturn y + x",
    "local": "rest, last = self.layers[S], self.layers[-1]\nreturn last(rest(x))",
    "loop": "for m in self.layers[S]:\n    x = m(x)\nreturn x",
    "index": "first = self.layers[S][0]\nreturn self.layers[S][-1](first(x)) * (len(self.layers[S]) / 4)",
    # the local called in a statement with no torch name in it, under a branch (guided-diffusion's ResBlock)
    "branch": "if self.flag:\n    rest, last = self.layers[S], self.layers[-1]\n    h = rest(x)\n"
    "    x = last(h)\nreturn x",
}
# a ModuleList is not callable in torch: its "call" and "local" uses loop over the slice / the local
LIST_USES = {
    "call": "y = x\nfor m in self.layers[S]:\n    y = m(y)\nreturn y + x",
    "local": "rest, last = self.layers[S], self.layers[-1]\nfor m in rest:\n    x = m(x)\nreturn last(x)",
    "branch": "if self.flag:\n    rest = self.layers[S]\n    for m in rest:\n        x = m(x)\nreturn x",
}

SOURCE = """\
import torch
import torch.nn as nn


class Seq(nn.Sequential):
    pass


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = {container}
        self.scale = nn.Linear(4, 4)
        self.flag = True

    def {method}(self, x):
        i, j = 1, 3
{body}
{forward}


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(n)])

    def forward(self, x):
        for b in self.blocks:
            x = torch.tanh(b(x))
        return x
"""


def _source(slice_: str, container: str, use: str, place: str) -> str:
    layers = "nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4)"
    cls = CONTAINERS[container]
    built = f"{cls}([{layers}])" if container == "ModuleList" else f"{cls}({layers})"
    body = (LIST_USES if container == "ModuleList" else {}).get(use, USES[use]).replace("S", SLICES[slice_])
    body = "\n".join(" " * 8 + line for line in body.splitlines())
    forward = "\n    def forward(self, x):\n        return self._forward(x)\n" if place == "helper" else ""
    return SOURCE.format(container=built, body=body, method="_forward" if forward else "forward", forward=forward)


# (instances, place): two blocks in a method forward calls (statements there with no torch name in them are
# converted only where a construct asks for them); one block in forward itself, for the tail slice
CASES = [
    (s, c, u, n, p)
    for s in SLICES
    for c in CONTAINERS
    for u in USES
    for n, p in ((1, "forward"), (2, "helper"))
    if n == 2 or s == "tail"
]


@pytest.mark.parametrize(("slice_", "container", "use", "instances", "place"), covering(CASES, pairs=True))
def test_container_slice_equals_torch(tmp_path, slice_, container, use, instances, place):
    source = _source(slice_, container, use, place)
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert f"tuple(self.layers)[{SLICES[slice_]}]" in code, code
    torch = require_module("torch")
    torch.manual_seed(0)
    tnet = tmod.Net(instances)
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    built = []

    def build():
        built.append(mmod.Net(instances))
        return built[-1]

    errors = compare_modes(tnet, build, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)
    names = sorted(tnet.state_dict())
    for net in built:  # after running: no slice renamed a parameter
        assert sorted(p.name for p in net.get_parameters()) == names, code


def test_non_container_slices_stay():
    source = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))
        self.layers = nn.Sequential(nn.Linear(4, 4))

    def forward(self, x, xs):
        return x * self.w[1:].sum() + xs[1:][0] + self.layers[0](x)
"""
    code = convert_source(source).code
    assert "tuple(" not in code and "call_cells" not in code, code


def test_locals_called_in_plain_statements_of_a_large_file():
    """guided-diffusion's ResBlock._forward: ``h = in_rest(x)`` has no torch name in it, and in a file this
    size such statements are left unvisited unless a construct asks for them."""
    path = require_kit(CORPUS / "openai" / "guided-diffusion" / "guided_diffusion" / "unet.py")
    code = convert_source(path.read_text(encoding="utf-8"), "unet.py").code
    assert "in_rest, in_conv = tuple(self.in_layers)[:-1], self.in_layers[-1]" in code
    assert "h = call_cells(in_rest, x)" in code and "h = call_cells(out_rest, h)" in code
