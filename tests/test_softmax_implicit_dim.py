"""Issue 24, class 5: ``nn.Softmax()`` without dim (torch's deprecated implicit dim: 0 for 0-D, 1-D and 3-D
input, else 1) was left as torch code; MindSpore's layers default to the last axis.

A generated matrix — layer (Softmax/LogSoftmax/Softmin) × how the dim is given (omitted, None, a literal,
a keyword, a constructor argument holding None or an int) × input rank 1..4 — converted and run in PyNative
and GRAPH_MODE against torch.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from matrix_support import covering
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

DIMS = {"omitted": "", "none": "None", "literal": "0", "keyword": "dim=-1", "arg_none": "d", "arg_int": "d"}
SOURCE = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, d={default}):
        super().__init__()
        self.act = nn.{layer}({dim})

    def forward(self, x):
        return self.act(x)
"""
MATRIX = list(itertools.product(("Softmax", "LogSoftmax", "Softmin"), DIMS, (1, 2, 3, 4)))


@pytest.mark.parametrize(("layer", "dim", "rank"), covering(MATRIX, pairs=True))
def test_softmax_layers_with_any_dim_match_torch_in_both_modes(tmp_path, layer, dim, rank):
    import mindspore as ms
    import torch

    default = "0" if dim == "arg_int" else "None"
    tmod, mmod, code = convert_pair(SOURCE.format(layer=layer, dim=DIMS[dim], default=default), tmp_path)
    x = np.random.default_rng(rank).standard_normal((3, 4, 2, 5)[:rank]).astype(np.float32)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # torch: "Implicit dimension choice ... has been deprecated"
        expected = tmod.Net()(torch.from_numpy(x))
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            got = mmod.Net()(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-5, (mode, code)
