"""Issue 24, class 4: ``x[mask] = v`` and ``x[mask] += v`` with a boolean mask inside a converted
forward (segment-anything's prompt encoder: ``point_embedding[labels == 0] += self.point_embeddings[0]
.weight``). PyNative takes MindSpore's bool setitem; GRAPH_MODE broadcasts a tensor value to the whole
tensor and fails to compile.

A generated matrix: mask spellings (==, !=, <, >=, ``~``, ``&``, ``|``, ``torch.logical_and``,
``isnan``-like calls) × statements (``=`` and ``+=``, ``-=``, ``*=``, ``/=``) × values (a Python
scalar, a one-row tensor, a vector over the last dimension, an Embedding's weight, one row per
selected element) × masks over the leading one or two dimensions: equal to torch in PyNative and
GRAPH_MODE; an integer or slice index is left as written.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

MASKS = {
    "eq": "labels == -1",
    "ne": "labels != 0",
    "lt": "labels < 1",
    "ge": "labels >= 1",
    "invert": "~(labels == 1)",
    "and": "(labels >= 0) & (labels < 2)",
    "or": "(labels == 0) | (labels == 2)",
    "logical": "torch.logical_and(labels > -1, labels < 1)",
}
STATEMENTS = ("=", "+=", "-=", "*=", "/=")
VALUES = ("2.5", "w", "w[0]", "self.emb.weight")
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1, 4)

    def forward(self, x, labels, w, rows):
        y = x.clone()
{body}
        y[0] = y[0] * 1.5
        y[:, 1] += 1.0
        return y
"""


def _inputs(rng: np.random.Generator) -> list[np.ndarray]:
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    labels = np.array([[-1, 0, 1, 2, 1], [1, 2, -1, 0, 0]], np.int64)
    w = (rng.random((1, 4)) + 0.5).astype(np.float32)
    rows = rng.standard_normal((3, 4)).astype(np.float32)  # one row per element of labels == 1 / == 0
    return [x, labels, w, rows]


@pytest.mark.parametrize("mask", MASKS)
def test_boolean_mask_updates_match_torch_in_both_modes(tmp_path, mask):
    import mindspore as ms
    import torch

    lines = [f"        y[{MASKS[mask]}] {st} {value}" for st in STATEMENTS for value in VALUES]
    lines += [
        "        y[labels == 1] = rows",
        "        y[labels[:, 0] == 1] += rows[0]",
        "        y[labels == 0] -= rows",
    ]
    tmod, mmod, code = convert_pair(SOURCE.format(body="\n".join(lines)), tmp_path)
    assert "masked_assign(" in code and "y[0] = y[0] * 1.5" in code, code
    torch.manual_seed(0)
    tnet = tmod.Net().eval()
    inputs = _inputs(np.random.default_rng(0))
    with torch.no_grad():
        expected = tnet(*[torch.from_numpy(a) for a in inputs])
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            mnet = mmod.Net()
            mnet.emb.embedding_table.set_data(ms.Tensor(tnet.emb.weight.detach().numpy()))
            got = mnet(*[ms.Tensor(a) for a in inputs])
        assert relative_error(expected, got) <= 1e-5, (mode, code)
