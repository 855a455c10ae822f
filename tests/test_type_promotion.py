"""Issue 24, class 3: tensors of different dtypes meeting in one op. torch promotes them to a common dtype
(``torch.cat([labels, padding_label])`` of int64 and float32 gives float32: segment-anything's prompt
encoder); MindSpore's Concat and Stack kernels refuse mixed dtypes. Binary operators promote in both.

A generated matrix: every pair of dtypes users mix (int/float, bool/float, bool/int, int32/int64,
float16/float32, uint8/int8, float64/int) through every spelling of the concatenation (list, tuple,
keyword ``tensors=``, ``dim`` positional / keyword / negative, ``torch.concat``, ``torch.concatenate``,
a comprehension, ``torch.stack``) and the binary operators, inside a converted ``forward``: dtype and
values equal to torch's, in PyNative and in GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode

pytestmark = pytest.mark.differential

PAIRS = {
    "int64_float32": ("int64", "float32"),
    "bool_float32": ("bool", "float32"),
    "bool_int64": ("bool", "int64"),
    "int32_int64": ("int32", "int64"),
    "float16_float32": ("float16", "float32"),
    "uint8_int8": ("uint8", "int8"),
    "int32_float64": ("int32", "float64"),
    "float32_float32": ("float32", "float32"),
}
SPELLINGS = (
    "torch.cat([a, b])",
    "torch.cat((b, a), 1)",
    "torch.cat([a, b], dim=-1)",
    "torch.cat(tensors=[b, a], dim=0)",
    "torch.concat([a, b, a], 1)",
    "torch.concatenate((b, a), axis=0)",
    "torch.cat([t for t in (a, b)], dim=1)",
    "torch.cat(pair, 1)",
    "torch.stack([a, b])",
    "torch.stack((b, a), dim=1)",
    "torch.stack(tensors=[a, b, b], dim=-1)",
)
BINARY = ("a + b", "b - a", "a * b", "b * a")
SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(3, 3)

    def forward(self, a, b):
        pair = [a, b]
        return ({outputs},)
"""


def _value(dtype: str, rng: np.random.Generator) -> np.ndarray:
    if dtype == "bool":
        return rng.random((2, 3)) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0 if dtype.startswith("u") else -5, 6, size=(2, 3)).astype(dtype)
    return rng.standard_normal((2, 3)).astype(dtype)


def _ops(pair: tuple[str, str]) -> tuple[str, ...]:
    # bool - bool is an error in torch; every other mix has a result type
    return SPELLINGS + tuple(op for op in BINARY if not (pair == ("bool", "bool") or "-" in op and "bool" in pair))


@pytest.mark.parametrize("pair", PAIRS)
def test_mixed_dtypes_promote_as_torch_in_both_modes(tmp_path, pair):
    import mindspore as ms
    import torch

    ops = _ops(PAIRS[pair])
    tmod, mmod, code = convert_pair(SOURCE.format(outputs=", ".join(ops)), tmp_path)
    rng = np.random.default_rng(len(pair))
    a, b = (_value(d, rng) for d in PAIRS[pair])
    expected = tmod.Net()(torch.from_numpy(a), torch.from_numpy(b))
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(mode):
            got = mmod.Net()(ms.Tensor(a), ms.Tensor(b))
        for op, e, g in zip(ops, expected, got):
            e_np = e.numpy()
            g_np = g.asnumpy()
            assert str(g_np.dtype) == str(e_np.dtype), (mode, op, g_np.dtype, e_np.dtype, code)
            np.testing.assert_allclose(
                g_np.astype(np.float64), e_np.astype(np.float64), rtol=1e-3, err_msg=f"{mode} {op}"
            )
