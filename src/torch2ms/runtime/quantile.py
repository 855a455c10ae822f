"""torch's quantile and nanquantile on MindSpore CPU (used by converted code; GRAPH_MODE-safe).

MindSpore's Quantile has no CPU kernel in 2.10 ("Unsupported op [Quantile] on CPU"): the
quantiles are read from a sort, with torch's five interpolation rules.
"""

from __future__ import annotations

from typing import Any

import mindspore
from mindspore import ops

__all__ = ["quantile"]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _between(lo: Any, hi: Any, pos: Any, interpolation: str) -> Any:
    """The value at fractional rank ``pos`` from its neighbours ``lo`` (floor) and ``hi`` (ceil)."""
    if interpolation == "lower":
        return lo
    if interpolation == "higher":
        return hi
    if interpolation == "midpoint":
        return (lo + hi) / 2
    if interpolation == "nearest":
        return ops.where(ops.round(pos) == ops.floor(pos), lo, hi)  # round half to even, as torch
    return lo + (hi - lo) * (pos - ops.floor(pos))


def quantile(
    x: Any,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    interpolation: str = "linear",
    ignore_nan: bool = False,
) -> Any:
    """``x.quantile(q, dim, keepdim, interpolation=...)``; ``ignore_nan=True`` is nanquantile.

    A float ``q`` reduces ``dim``; a 1-D tensor of q puts its quantiles first, as torch. A slice
    with a NaN gives NaN (quantile) or is read without its NaNs (nanquantile, NaN if all are).
    """
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"quantile: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    ndim = x.ndim
    axis = None if dim is None else dim % ndim
    data = x.reshape((1, -1)) if axis is None else x.moveaxis(axis, -1)
    nan = ops.isnan(data)
    # MindSpore's sort misplaces NaNs (measured: [1, nan, 3, 2, 0.5] -> [1, nan, 0.5, 2, 3]): sort
    # them as +inf, last; only the first `valid` values of a slice are read when NaNs are skipped.
    values = ops.sort(ops.where(nan, ops.full_like(data, float("inf")), data), axis=-1)[0]
    n = data.shape[-1]
    valid = (~nan).sum(-1, keepdims=True)
    count = valid if ignore_nan else ops.full_like(valid, n)
    scalar_q = isinstance(q, (int, float))
    qs = ops.full((1,), q, dtype=values.dtype) if scalar_q else q.reshape(-1).astype(values.dtype)
    pos = ops.maximum(count - 1, ops.zeros_like(count)).astype(values.dtype) * qs  # (..., nq)
    lo_idx = ops.floor(pos).astype(mindspore.int64)
    hi_idx = ops.ceil(pos).astype(mindspore.int64)
    lo = ops.gather_elements(values, -1, lo_idx)
    hi = ops.gather_elements(values, -1, hi_idx)
    out = _between(lo, hi, pos, interpolation)
    broken = (count == 0) if ignore_nan else (valid < n)
    out = ops.where(broken, ops.full_like(out, float("nan")), out)
    out = out.moveaxis(-1, 0)  # (nq, ...)
    if axis is None:
        out = out.reshape((out.shape[0],) + ((1,) * ndim if keepdim else ()))
    elif keepdim:
        out = out.expand_dims(axis + 1)
    return out[0] if scalar_q else out
