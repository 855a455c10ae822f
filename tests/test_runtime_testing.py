"""torch2ms.runtime.assert_close / assert_allclose fail exactly where torch.testing's do.

The KB's differential cases can only show calls that pass on both sides; these pairs also cover
the failures (values just outside the default tolerance, dtype and shape mismatches, nan).
"""

import numpy as np
import pytest
from requires_support import require_module

torch = require_module("torch")
ms = require_module("mindspore")

from torch2ms.runtime import assert_allclose, assert_close  # noqa: E402

X = np.array([1.0, -2.0, 3.5, 1e-3], dtype=np.float32)
PAIRS = [
    ("equal", X, X, {}),
    ("inside float32 tolerance", X, X * (1 + 1e-6), {}),
    ("outside float32 tolerance", X, X * (1 + 1e-4), {}),
    ("outside, given loose rtol", X, X * (1 + 1e-4), {"rtol": 1e-3, "atol": 0.0}),
    ("dtype differs", X, X.astype(np.float64), {}),
    ("dtype differs, not checked", X, X.astype(np.float64), {"check_dtype": False}),
    ("shape differs", X, X[:3], {}),
    ("nan", np.array([np.nan], np.float32), np.array([np.nan], np.float32), {}),
    ("nan, equal_nan", np.array([np.nan], np.float32), np.array([np.nan], np.float32), {"equal_nan": True}),
    ("ints off by one", np.arange(4), np.arange(4) + 1, {}),
]


def _raises(fn, *args, **kwargs) -> bool:
    try:
        fn(*args, **kwargs)
    except AssertionError:
        return True
    return False


@pytest.mark.parametrize("name,a,e,kwargs", PAIRS, ids=[p[0] for p in PAIRS])
def test_assert_close_fails_where_torch_fails(name, a, e, kwargs):
    torch_raises = _raises(torch.testing.assert_close, torch.from_numpy(a), torch.from_numpy(e), **kwargs)
    assert _raises(assert_close, ms.Tensor(a), ms.Tensor(e), **kwargs) == torch_raises


@pytest.mark.parametrize("scale", [1 + 5e-5, 1 + 5e-4])
def test_assert_allclose_uses_torchs_looser_defaults(scale):
    a, e = X, (X * scale).astype(np.float32)
    torch_raises = _raises(torch.testing.assert_allclose, torch.from_numpy(a), torch.from_numpy(e))
    assert _raises(assert_allclose, ms.Tensor(a), ms.Tensor(e)) == torch_raises
