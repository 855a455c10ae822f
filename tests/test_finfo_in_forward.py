"""Issue 24, class 5: ``-torch.finfo(dtype).max`` into ``masked_fill`` (perceiver: "ScalarToTensor ... got
float32": numpy.finfo gives numpy scalars) and finfo inside a GRAPH_MODE construct.

A generated matrix — field (max, min, eps, tiny, resolution) × how the dtype is named (the input's dtype,
a torch dtype literal, omitted) × where the number goes (masked_fill, arithmetic, clamp) — converted and
run in PyNative and GRAPH_MODE against torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

FIELDS = ("max", "min", "eps", "tiny", "resolution")
DTYPES = {"input": "x.dtype", "literal": "torch.float32", "omitted": ""}
USES = {
    "masked_fill": "x.masked_fill(x > 0.5, -{info} * 1e-30)",
    "arithmetic": "x * 0 + {info} * 1e-30 if {info} > 1 else x + {info}",
    "clamp": "x.clamp(min=-abs({info}) * 1e-38, max=abs({info}) * 1e-38)",
}
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return {use}
"""


@pytest.mark.parametrize(("field", "dtype", "use"), product(FIELDS, DTYPES, USES))
def test_finfo_numbers_in_forward_match_torch_in_both_modes(tmp_path, field, dtype, use):
    import mindspore as ms
    import torch

    info = f"torch.finfo({DTYPES[dtype]}).{field}"
    tmod, mmod, code = convert_pair(SOURCE.format(use=USES[use].format(info=info)), tmp_path)
    x = np.random.default_rng(0).random((3, 4)).astype(np.float32)
    with torch.no_grad():
        expected = tmod.Net()(torch.from_numpy(x))
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            got = mmod.Net()(ms.Tensor(x))
        assert relative_error(expected, got) <= 1e-6, (mode, code)
