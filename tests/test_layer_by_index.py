"""Issue 24, class 8: a layer reached by a constant index into the container that holds it
(segment-anything's ``self.point_embeddings[0].weight``, an Embedding in a ModuleList built from a
list comprehension bound to a name). MindSpore names the parameter by the layer's class
(``embedding_table``, ``gamma``/``beta``), so the converted read must too: "'Embedding' object has no
attribute 'weight'" otherwise.

A generated matrix: containers (ModuleList of a comprehension, of a name bound to one, of
``list(name)``, of a generator, of a list display; nn.Sequential of positional layers) × layers
(Embedding, LayerNorm, BatchNorm1d, and a Linear whose ``weight`` keeps its name) × index (0, last,
negative): the converted forward equals torch's in PyNative and GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

LAYERS = {
    "embedding": ("nn.Embedding(1, 4)", "weight[0]"),
    "layernorm": ("nn.LayerNorm(4)", "weight"),
    "layernorm_bias": ("nn.LayerNorm(4)", "bias"),
    "batchnorm": ("nn.BatchNorm1d(4)", "weight"),
    "linear": ("nn.Linear(4, 4)", "weight[1]"),
}
CONTAINERS = {
    "comprehension": ("", "nn.ModuleList([{layer} for _ in range(3)])"),
    "name": ("items = [{layer} for i in range(3)]", "nn.ModuleList(items)"),
    "list_of_name": ("items = [{layer} for i in range(3)]", "nn.ModuleList(list(items))"),
    "generator": ("", "nn.ModuleList({layer} for _ in range(3))"),
    "display": ("", "nn.ModuleList([{layer}, {layer}, {layer}])"),
    "sequential": ("", "nn.Sequential({layer}, {layer}, {layer})"),
}
INDEXES = ("0", "2", "-1")
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        {prep}
        self.layers = {container}

    def rebinds(self, items=None):
        items = [items]  # the same local name bound in another method: each method has its own
        return items

    def forward(self, x):
        return {reads}
"""
RENAMES = {"embedding_table": "weight", "gamma": "weight", "beta": "bias", "moving_mean": "running_mean"}


def _torch_key(ms_name: str) -> str:
    head, _, last = ms_name.rpartition(".")
    last = {"moving_variance": "running_var"}.get(last, RENAMES.get(last, last))
    return f"{head}.{last}" if head else last


@pytest.mark.parametrize(("layer", "container"), product(LAYERS, CONTAINERS, pairs=False))
def test_layer_reached_by_index_reads_its_mindspore_parameter(tmp_path, layer, container):
    import mindspore as ms
    import torch

    ctor, attr = LAYERS[layer]
    prep, holder = CONTAINERS[container]
    reads = " + ".join(f"x * self.layers[{i}].{attr}" for i in INDEXES)
    source = SOURCE.format(prep=prep.format(layer=ctor) or "pass", container=holder.format(layer=ctor), reads=reads)
    tmod, mmod, code = convert_pair(source, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    with torch.no_grad():
        for p in tnet.parameters():
            p.copy_(torch.randn_like(p))
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    state = {k: v.numpy() for k, v in tnet.state_dict().items()}
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.Net()
            mnet.set_train(False)
            for p in mnet.get_parameters():
                p.set_data(ms.Tensor(state[_torch_key(p.name)]))
            got = mnet(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, (mode, code)
