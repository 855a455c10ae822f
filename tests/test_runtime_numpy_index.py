"""R8 numpy indices on a converted Tensor, as on torch's: ``t[np.where(m)[0][0]]`` (a numpy.int64) and
``t[np.array([...])]`` index a torch Tensor, but raise IndexError in MindSpore 2.10's PyNative indexing.
The runtime import converted code takes for numpy interop (numpy_defers_to_tensors) passes them on as an
int and a Tensor. Real torch and real MindSpore on the same data and indices."""

from __future__ import annotations

import mindspore as ms
import numpy as np
import pytest
import torch

from torch2ms.runtime import numpy_interop

DATA = np.arange(24, dtype=np.float32).reshape(4, 6)
HITS = np.where(np.array([0, 1, 0, 1]) == 1)[0]
INDICES = {
    "numpy_int64": HITS[0],
    "numpy_int32_pair": (np.int32(2), np.int64(3)),
    "int_array": np.array([0, 2, 3]),
    "bool_array": np.array([True, False, True, True]),
    "mixed_tuple": (slice(None), np.array([1, 4])),
}


@pytest.mark.parametrize("name", INDICES)
def test_r8_numpy_indices_read_and_write_like_torch(name):
    assert numpy_interop.numpy_defers_to_tensors
    index = INDICES[name]
    t, m = torch.from_numpy(DATA.copy()), ms.Tensor(DATA.copy())
    np.testing.assert_array_equal(m[index].asnumpy(), t[index].numpy())
    t[index] = -1.0
    m[index] = -1.0
    np.testing.assert_array_equal(m.asnumpy(), t.numpy())


def test_r8_numpy_index_patch_is_applied_once():
    numpy_interop._defer_numpy_to_tensors()
    inner = ms.Tensor.__getitem__
    numpy_interop._defer_numpy_to_tensors()
    assert ms.Tensor.__getitem__ is inner
    assert float(ms.Tensor(DATA)[np.int64(1), 2]) == float(torch.from_numpy(DATA)[np.int64(1), 2])
