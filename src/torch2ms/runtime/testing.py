"""torch.testing for MindSpore tensors: assert_close / assert_allclose with torch's tolerances, make_tensor.

Host-side helpers (they read values with ``asnumpy``): call them outside ``construct``, as tests do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mindspore
import numpy as np
from mindspore import ops

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

# torch.testing's default (rtol, atol) per dtype; integers and bools compare exactly.
_CLOSE = {"Float16": (1e-3, 1e-5), "BFloat16": (1.6e-2, 1e-5), "Float32": (1.3e-6, 1e-5), "Float64": (1e-7, 1e-7)}
_CLOSE |= {"Complex64": _CLOSE["Float32"], "Complex128": _CLOSE["Float64"]}
# The deprecated assert_allclose's own, looser table.
_ALLCLOSE = {"Float16": (1e-3, 1e-3), "Float32": (1e-4, 1e-5), "Float64": (1e-5, 1e-8)}


def _values(x: Any) -> tuple[np.ndarray, str]:
    """(numpy values, MindSpore dtype name) of a tensor or anything mindspore.tensor takes (floats are float32, as in torch)."""
    if not isinstance(x, mindspore.Tensor):
        x = mindspore.tensor(x)
    name = str(x.dtype)
    if x.dtype == mindspore.bfloat16:
        x = x.astype(mindspore.float32)
    return x.asnumpy(), name


def _tolerances(table: dict[str, tuple[float, float]], *dtypes: str) -> tuple[float, float]:
    pairs = [table.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _compare(
    actual: Any,
    expected: Any,
    rtol: float | None,
    atol: float | None,
    equal_nan: bool,
    check_dtype: bool,
    msg: Any,
    table: dict,
) -> None:
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    a, a_dtype = _values(actual)
    e, e_dtype = _values(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}.")
    if check_dtype and a_dtype != e_dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {a_dtype} != {e_dtype}.")
    if rtol is None or atol is None:
        rtol, atol = _tolerances(table, a_dtype, e_dtype)
    wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64
    ok = np.isclose(a.astype(wide), e.astype(wide), rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not ok.all():
        bad = int((~ok).sum())
        worst = float(np.nanmax(np.abs(a.astype(wide) - e.astype(wide))))
        raise AssertionError(
            msg
            or f"Tensor-likes are not close! Mismatched elements: {bad} / {ok.size}; greatest absolute difference: {worst}"
        )


def assert_close(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_dtype: bool = True,
    msg: Any = None,
    **_ignored: Any,  # check_device, check_layout, check_stride: no meaning in MindSpore
) -> None:
    """torch.testing.assert_close: |actual - expected| <= atol + rtol * |expected|, torch's per-dtype defaults."""
    if isinstance(actual, Sequence) and not isinstance(actual, str) and not isinstance(expected, mindspore.Tensor):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, msg=msg)
        return
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, _CLOSE)


def assert_allclose(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    msg: str = "",
) -> None:
    """The deprecated torch.testing.assert_allclose: dtypes are not compared and its default tolerances are looser."""
    _compare(actual, expected, rtol, atol, equal_nan, False, msg or None, _ALLCLOSE)


_INTEGERS = (mindspore.uint8, mindspore.int8, mindspore.int16, mindspore.int32, mindspore.int64)


def make_tensor(
    *shape: Any,
    dtype: Any,
    low: float | None = None,
    high: float | None = None,
    exclude_zero: bool = False,
    **_ignored: Any,  # device, requires_grad, noncontiguous, memory_format
) -> Any:
    """torch.testing.make_tensor: uniform in [low, high), by default [-9, 9) for floats and [-9, 10) for ints."""
    size = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    if dtype == mindspore.bool_:
        out = ops.randint(0, 2, size, dtype=mindspore.int32).astype(mindspore.bool_)
    elif dtype in _INTEGERS:
        lo = max(-9 if low is None else int(low), 0 if dtype == mindspore.uint8 else -(2**63))
        out = ops.randint(lo, 10 if high is None else int(high), size, dtype=mindspore.int64).astype(dtype)
    else:
        flo, fhi = -9.0 if low is None else float(low), 9.0 if high is None else float(high)
        out = (ops.rand(size, dtype=mindspore.float32) * (fhi - flo) + flo).astype(dtype)
    if exclude_zero:  # zeros become 1 (integers) or the smallest normal float, as in torch
        tiny = 1.0 if dtype == mindspore.bool_ or dtype in _INTEGERS else float(np.finfo(np.float32).tiny)
        out = ops.where(out == 0, ops.full_like(out, tiny), out)
    return out
