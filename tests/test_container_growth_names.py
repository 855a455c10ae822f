"""Issue 24, class 1: cells added to a container after it is built — ``ModuleList.append`` /
``extend`` / ``insert`` / ``+=``, ``nn.Sequential.append``, ``ModuleDict[k] = ...`` / ``update`` — in a
list assigned empty or not, nested in a Sequential subclass (guided-diffusion's
``self.input_blocks.append(TimestepEmbedSequential(*layers))``): the converted Cell's parameter names
must be torch's state-dict keys (modulo the KB's layer renames), or a converted checkpoint does not load.

A generated matrix of growth spellings × what is grown (a layer, a Sequential of layers, a Sequential
subclass holding a block with its own ModuleList): names equal to torch's keys, and the forward with
torch's weights equal to torch's in PyNative and GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

GROWTH = {
    "append": ("nn.ModuleList()", "self.blocks.append({cell})"),
    "append_to_built": ("nn.ModuleList([nn.Linear(4, 4)])", "self.blocks.append({cell})"),
    "extend": ("nn.ModuleList()", "self.blocks.extend([{cell}])"),
    "iadd": ("nn.ModuleList([nn.Linear(4, 4)])", "self.blocks += [{cell}]"),
    "insert": ("nn.ModuleList([nn.Linear(4, 4)])", "self.blocks.insert(0, {cell})"),
    "sequential_append": ("nn.Sequential(nn.Linear(4, 4))", "self.blocks.append({cell})"),
    "dict_setitem": ("nn.ModuleDict()", "self.blocks[f'b{{i}}'] = {cell}"),
    "dict_update": ("nn.ModuleDict({{'first': nn.Linear(4, 4)}})", "self.blocks.update({{f'b{{i}}': {cell}}})"),
}
CELLS = {
    "layer": "nn.Linear(4, 4)",
    "sequential": "nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))",
    "subclass": "Chain(Block(), nn.Linear(4, 4))",
}
SOURCE = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.ModuleList()
        self.inner.append(nn.Linear(4, 4))
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(self.inner[0](x))


class Chain(nn.Sequential):
    def forward(self, x):
        for layer in self:
            x = layer(x)
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = {empty}
        for i in range(2):
            {grow}
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for block in {walk}:
            x = torch.tanh(block(x))
        return self.head(x)
"""
RENAMES = {"gamma": "weight", "beta": "bias"}


@pytest.mark.parametrize(("growth", "cell"), product(GROWTH, CELLS, pairs=False))
def test_grown_containers_keep_torch_names_in_both_modes(tmp_path, growth, cell):
    import mindspore as ms
    import torch

    empty, grow = GROWTH[growth]
    walk = "self.blocks.values()" if "dict" in growth else "self.blocks"
    source = SOURCE.format(empty=empty.format(), grow=grow.format(cell=CELLS[cell]), walk=walk)
    tmod, mmod, code = convert_pair(source, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    state = {k: v.numpy() for k, v in tnet.state_dict().items()}
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.Net()
            names = {}
            for p in mnet.get_parameters():
                head, _, last = p.name.rpartition(".")
                names[f"{head}.{RENAMES.get(last, last)}"] = p
            assert sorted(names) == sorted(state), (mode, sorted(names), sorted(state), code)
            for key, p in names.items():
                p.set_data(ms.Tensor(state[key]))
            got = mnet(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, (mode, code)
