"""Issue 24, class 5: ``nn.ModuleList`` built from anything but a list (CellList takes a list only:
"the new cells wanted to append should be instance of list, but got tuple").

A generated matrix of the ways code hands cells to ModuleList — a ``*fns`` tuple (mlp-mixer's
ParallelSum), a tuple literal, a generator, ``map``, a name bound to a list, a list literal — each
converted, its weights carried by name, run in PyNative and GRAPH_MODE against torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

FORMS = {
    "star_tuple": ("nn.ModuleList(fns)", "*fns", "Net(nn.Linear(4, 4), nn.Linear(4, 4), nn.Tanh())"),
    "tuple_literal": ("nn.ModuleList((nn.Linear(4, 4), nn.Linear(4, 4)))", "", "Net()"),
    "generator": ("nn.ModuleList(nn.Linear(4, 4) for _ in range(3))", "", "Net()"),
    "generator_parens": ("nn.ModuleList((nn.Linear(4, 4) for _ in range(2)))", "", "Net()"),
    "map": ("nn.ModuleList(map(lambda n: nn.Linear(4, n), [4, 4]))", "", "Net()"),
    "name": ("nn.ModuleList(layers)", "layers=None", "Net([nn.Linear(4, 4), nn.Linear(4, 4)])"),
    "keyword": ("nn.ModuleList(modules=tuple(layers))", "layers=None", "Net([nn.Linear(4, 4)])"),
    "list": ("nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])", "", "Net()"),
}
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, {params}):
        super().__init__()
        self.fns = {ctor}
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        total = x
        for fn in self.fns:
            total = total + fn(x)
        return self.out(total) + self.fns[0](x).sum()


def build():
    return {factory}
"""


@pytest.mark.parametrize("form", FORMS)
def test_module_list_from_any_iterable_matches_torch_in_both_modes(tmp_path, form):
    import mindspore as ms
    import torch

    ctor, params, factory = FORMS[form]
    source = SOURCE.format(ctor=ctor, params=params or "unused=None", factory=factory)
    tmod, mmod, code = convert_pair(source, tmp_path)
    torch.manual_seed(0)
    tnet = tmod.build().eval()
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x))
    weights = {k: v.numpy() for k, v in tnet.state_dict().items()}
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.build()
            params_ms = {p.name: p for p in mnet.get_parameters()}
            assert sorted(params_ms) == sorted(weights), (sorted(params_ms), code)
            for name, w in weights.items():
                params_ms[name].set_data(ms.Tensor(w))
            got = mnet(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, (mode, code)
