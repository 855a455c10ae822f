"""Issue 24, class 5: ``torch.meshgrid`` of one tensor (perceiver's ``meshgrid(*axis_pos)`` for a 1-D input
became a 12-D grid: the lone tensor was unpacked as if it were the list of tensors).

A generated matrix of spellings — the tensors written out, a list literal, a name bound to a list of one,
two or three tensors, a lone tensor by name, ``*name`` (through TorchCompat at run time) — with both
indexings, converted and run in PyNative and GRAPH_MODE against torch.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matrix_support import covering
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

CALLS = {
    "written_out": "torch.meshgrid({args}{kw})",
    "list_literal": "torch.meshgrid([{args}]{kw})",
    "name": "torch.meshgrid(axes{kw})",
    "starred": "torch.meshgrid(*axes{kw})",
}
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, y, z):
        axes = [x, y, z][:{n}]
        grids = {call}
        return torch.stack(grids, dim=-1) if len(grids) > 1 else grids[0] * 2
"""


MATRIX = list(itertools.product(CALLS, (1, 2, 3), ("", ", indexing='ij'", ", indexing='xy'")))


@pytest.mark.parametrize(("call", "n", "indexing"), covering(MATRIX, pairs=True))
def test_meshgrid_of_one_or_more_tensors_matches_torch(tmp_path, call, n, indexing):
    import mindspore as ms
    import torch

    args = ", ".join("xyz"[:n])
    source = SOURCE.format(n=n, call=CALLS[call].format(args=args, kw=indexing))
    tmod, mmod, code = convert_pair(source, tmp_path, allow_marks=True)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(k).astype(np.float32) for k in (3, 4, 2)]
    with torch.no_grad():
        expected = tmod.Net()(*[torch.from_numpy(x) for x in xs])
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        if mode == "GRAPH_MODE" and call == "starred":
            continue  # *args reaches TorchCompat (a run-time rewrite): PyNative only, said in the code
        with ms_mode(mode):
            got = mmod.Net()(*[ms.Tensor(x) for x in xs])
        assert relative_error(expected, got) <= 1e-6, (mode, code)
