"""Issue 21 §3: a convolution without padding converts to ``pad_mode='valid'`` (MindSpore's word for it; its
default is 'same'), not ``pad_mode='pad', padding=0`` (140 times in the converted kit before).

A generated matrix: Conv1d/2d/3d × the spellings of no padding (left out, ``padding=0``, positional 0,
a tuple and a list of zeros) × stride/dilation, converted, the weights carried over by ``torch2ms weights``,
run in PyNative and GRAPH_MODE against torch. Transposed convolutions keep ``pad_mode='pad', padding=0``.
"""

from __future__ import annotations

import numpy as np
import pytest
from matrix_support import product
from rc_models_support import compare_modes, convert_pair

pytestmark = pytest.mark.differential

PADDINGS = {
    "omitted": "",
    "keyword_zero": ", padding=0",
    "positional_zero": ", {stride}, 0",
    "tuple": ", padding=({zeros})",
    "list": ", padding=[{zeros}]",
}
EXTRAS = {"plain": "", "strided": ", stride=2", "dilated": ", dilation=2"}
SOURCE = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv{d}d(3, 4, 3{padding}{extra})

    def forward(self, x):
        return self.conv(x)
"""


def _case(d: int, padding: str, extra: str) -> str | None:
    pad = PADDINGS[padding].format(stride=1, zeros=", ".join(["0"] * d) + ("," if d == 1 else ""))
    if padding == "positional_zero" and extra == "strided":
        pad = PADDINGS[padding].format(stride=2, zeros="")
        extra_src = ""
    else:
        extra_src = EXTRAS[extra]
    return SOURCE.format(d=d, padding=pad, extra=extra_src)


@pytest.mark.parametrize(("d", "padding", "extra"), product((1, 2, 3), PADDINGS, EXTRAS))
def test_no_padding_is_valid_and_matches_torch(tmp_path, d, padding, extra):
    source = _case(d, padding, extra)
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert "'valid'" in code and "padding=0" not in code and "'pad'" not in code, code
    x = np.random.default_rng(d).standard_normal((2, 3) + (9,) * d).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)


@pytest.mark.parametrize("d", (1, 2))
def test_transposed_convolutions_keep_pad_zero(tmp_path, d):
    source = SOURCE.format(d=d, padding="", extra="").replace(f"nn.Conv{d}d", f"nn.ConvTranspose{d}d")
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert "pad_mode='pad', padding=0" in code, code
    x = np.random.default_rng(d).standard_normal((2, 3) + (5,) * d).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)
