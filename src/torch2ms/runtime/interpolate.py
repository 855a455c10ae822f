"""torch's ``F.interpolate`` where ``mindspore.ops.interpolate`` cannot be told statically to agree.

``ops.interpolate`` refuses ``scale_factor`` for most modes and samples with in/out where torch
samples with 1/scale; its bicubic kernel differs (0.24 off). When the scale is only known at run
time (``scale_factor=self.up``), fractional, or the mode is bicubic, the converter calls this:
each spatial axis is resampled by a matrix built with torch's own index and weight formulas
(nearest, nearest-exact, linear modes, bicubic with A = -0.75, area), so the numbers are torch's.
``mindspore.ops.constexpr`` builds the matrices at compile time in GRAPH_MODE (static shapes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mindspore import Tensor, ops
from mindspore.ops import constexpr

__all__ = ["interpolate"]

_SPATIAL = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75


def _as_tuple(value: Any, n: int) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise ValueError(f"interpolate: expected {n} values, got {len(value)}")
        return tuple(value)
    return (value,) * n


def output_size(shape: tuple[int, ...], size: Any, scale_factor: Any) -> tuple[int, ...]:
    """torch's output size: ``size``, else floor(in * scale) per spatial axis."""
    n = len(shape) - 2
    if size is not None:
        return tuple(int(s) for s in _as_tuple(size, n))
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor must be given")
    return tuple(int(math.floor(float(d) * float(s))) for d, s in zip(shape[2:], _as_tuple(scale_factor, n)))


def _scale(n_in: int, n_out: int, align_corners: bool, scale: float | None) -> float:
    """torch's area_pixel_compute_scale."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _cubic_weights(t: float) -> tuple[float, float, float, float]:
    def near(x: float) -> float:  # |x| <= 1
        return ((_CUBIC_A + 2) * x - (_CUBIC_A + 3)) * x * x + 1

    def far(x: float) -> float:  # 1 < |x| < 2
        return ((_CUBIC_A * x - 5 * _CUBIC_A) * x + 8 * _CUBIC_A) * x - 4 * _CUBIC_A

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def axis_matrix(n_in: int, n_out: int, mode: str, align_corners: bool, scale: float | None) -> np.ndarray:
    """(n_out, n_in) weights: output j = sum_i W[j, i] * input i, as torch computes it."""
    w = np.zeros((n_out, n_in), np.float64)
    s = _scale(n_in, n_out, align_corners, scale)
    for j in range(n_out):
        if mode in ("nearest", "nearest-exact"):
            offset = 0.5 if mode == "nearest-exact" else 0.0
            w[j, min(int(math.floor((j + offset) * (1.0 / scale if scale else n_in / n_out))), n_in - 1)] = 1.0
        elif mode == "area":
            start, end = (j * n_in) // n_out, -((-(j + 1) * n_in) // n_out)
            w[j, start:end] = 1.0 / (end - start)
        elif mode == "bicubic":
            src = j * s if align_corners else s * (j + 0.5) - 0.5
            i0 = math.floor(src)
            for k, weight in enumerate(_cubic_weights(src - i0)):
                w[j, min(max(i0 - 1 + k, 0), n_in - 1)] += weight
        else:  # linear, bilinear, trilinear
            src = j * s if align_corners else max(s * (j + 0.5) - 0.5, 0.0)
            i0 = min(int(math.floor(src)), n_in - 1)
            i1 = min(i0 + 1, n_in - 1)
            frac = src - i0
            w[j, i0] += 1.0 - frac
            w[j, i1] += frac
    return w


def plan(shape: tuple[int, ...], size: Any, scale_factor: Any, mode: str, align_corners: Any, recompute: Any) -> tuple:
    """Per spatial axis: the transposed weight matrix (in, out) as nested tuples, or None when the
    axis keeps its length and its samples (identity)."""
    if mode not in ("nearest", "nearest-exact", "area", *_SPATIAL):
        raise ValueError(f"interpolate: mode {mode!r} is not supported")
    if align_corners and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError("align_corners only applies to linear, bilinear, bicubic and trilinear modes")
    out = output_size(shape, size, scale_factor)
    n = len(shape) - 2
    scales = _as_tuple(scale_factor, n) if scale_factor is not None and not recompute else (None,) * n
    mats = []
    for n_in, n_out, sc in zip(shape[2:], out, scales):
        w = axis_matrix(int(n_in), n_out, mode, bool(align_corners), None if sc is None else float(sc))
        identity = n_in == n_out and np.array_equal(w, np.eye(n_out))
        mats.append(None if identity else tuple(map(tuple, w.T.astype(np.float32).tolist())))
    return tuple(mats)


_plan = constexpr(plan)


def interpolate(
    input: Any,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: Any = None,
    recompute_scale_factor: Any = None,
    antialias: bool = False,
) -> Any:
    """``torch.nn.functional.interpolate`` with torch's numbers (no antialias)."""
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) has no MindSpore equivalent")
    mats = _plan(input.shape, size, scale_factor, mode, align_corners, recompute_scale_factor)
    x = input
    rank = len(input.shape)
    for k, mat in enumerate(mats):
        if mat is None:
            continue
        axis = k + 2
        moved = x.swapaxes(axis, rank - 1) if axis != rank - 1 else x
        moved = ops.matmul(moved, Tensor(mat, input.dtype))
        x = moved.swapaxes(axis, rank - 1) if axis != rank - 1 else moved
    return x
