"""R8 torch.nn.Dropout2d / F.dropout2d on inputs of rank 2, 3 and 5 (torch warns and still runs;
MindSpore's Dropout2D takes 4-D only): the converted layer draws once per (N, C) slice, as torch does.
Real torch and real MindSpore on the same ones-input: the same slice structure, the same scale, the
same share of dropped slices (within sampling noise)."""

from __future__ import annotations

import warnings

import mindspore as ms
import numpy as np
import pytest
import torch

from torch2ms.convert import convert_source
from torch2ms.runtime import nn_layers

SHAPES = [(64, 50), (16, 40, 6), (8, 20, 3, 4), (4, 10, 2, 3, 2)]
P = 0.4


def _slice_pattern(out: np.ndarray) -> np.ndarray:
    """Per (n, c) slice: its single value, after checking the slice is constant (dropped or kept whole)."""
    flat = out.reshape(out.shape[0], out.shape[1], -1)
    assert np.all(flat == flat[:, :, :1]), "a slice was partly dropped"
    return flat[:, :, 0]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}d")
def test_r8_dropout2d_drops_whole_nc_slices_like_torch(shape):
    torch.manual_seed(0)
    ms.set_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warning for ranks other than 3/4
        torch_out = torch.nn.Dropout2d(P).train()(torch.ones(shape)).numpy()
    layer = nn_layers.Dropout2d(P)
    layer.set_train(True)
    ms_out = layer(ms.Tensor(np.ones(shape, np.float32))).asnumpy()
    assert ms_out.shape == torch_out.shape
    torch_slices, ms_slices = _slice_pattern(torch_out), _slice_pattern(ms_out)
    assert set(np.unique(torch_slices)) <= {0.0, np.float32(1 / (1 - P))}
    assert set(np.unique(ms_slices)) <= set(np.unique(torch_slices)) | {0.0}
    assert abs((ms_slices == 0).mean() - (torch_slices == 0).mean()) < 0.15


def test_r8_dropout2d_functional_and_eval_identity():
    x = np.random.default_rng(0).standard_normal((6, 5, 7)).astype(np.float32)
    layer = nn_layers.Dropout2d(0.5)
    layer.set_train(False)
    torch_eval = torch.nn.Dropout2d(0.5).eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(layer(ms.Tensor(x)).asnumpy(), torch_eval)
    out = nn_layers.dropout2d(ms.Tensor(x), 0.5, True).asnumpy()
    kept = _slice_pattern(np.where(out == 0, 0.0, 1.0))
    assert 0 < kept.mean() < 1


def test_r8_dropout2d_converts_to_runtime_layer():
    src = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout2d(0.25)\n"
        "    def forward(self, x):\n        return F.dropout2d(self.drop(x), 0.1)\n"
    )
    code = convert_source(src).code
    assert "Dropout2d(0.25)" in code and "dropout2d(" in code
    assert "nn.Dropout2d" not in code and "ops.dropout2d" not in code
