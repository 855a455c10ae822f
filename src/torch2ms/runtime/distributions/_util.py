"""Shared pieces of the distributions: tensors from numbers, broadcasting, draws, safe math.

Needs MindSpore only (converted projects carry this package as it is).
"""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

FLOATS = (ms.float16, ms.float32, ms.float64, ms.bfloat16)
EULER_GAMMA = 0.57721566490153286060


def finfo(dtype: Any) -> np.finfo:
    """numpy's finfo for a MindSpore float dtype (tiny and eps clamp draws, as torch does)."""
    return np.finfo(np.float64 if dtype == ms.float64 else np.float32)


def as_tensor(value: Any, dtype: Any = None) -> Tensor:
    """A Tensor for a parameter or value: Python numbers become float32 (torch's default dtype)."""
    if isinstance(value, Tensor):
        return value if dtype is None or value.dtype == dtype else value.astype(dtype)
    return Tensor(np.asarray(value, dtype=np.float32 if dtype is None else None), dtype=dtype or ms.float32)


def float_dtype(*values: Any) -> Any:
    """The float dtype of the first float Tensor among ``values`` (float32 when none)."""
    for v in values:
        if isinstance(v, Tensor) and v.dtype in FLOATS:
            return v.dtype
    return ms.float32


def broadcast_all(*values: Any) -> list[Tensor]:
    """torch.distributions.utils.broadcast_all: numbers become Tensors of the common float dtype."""
    dtype = float_dtype(*values)
    tensors = [as_tensor(v, None if isinstance(v, Tensor) else dtype) for v in values]
    shape = tuple(np.broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    return [t if tuple(t.shape) == shape else ops.broadcast_to(t, shape) for t in tensors]


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def as_shape(sample_shape: Any) -> tuple[int, ...]:
    """A sample shape: torch.Size, tuple, list or a single int."""
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(int(s) for s in sample_shape)


def uniform(shape: tuple[int, ...], like: Tensor, low: float = 0.0, high: float = 1.0) -> Tensor:
    """Draws in [low, high) of ``like``'s dtype; clamped away from 0 and 1 as torch's samplers clamp."""
    info = finfo(like.dtype)
    u = ops.rand(*shape, dtype=ms.float32) if shape else ops.rand(1, dtype=ms.float32).reshape(())
    u = u.astype(like.dtype)
    return ops.clamp(u * (high - low) + low, float(low + info.tiny), float(high - info.eps))


def standard_normal(shape: tuple[int, ...], like: Tensor) -> Tensor:
    draws = ops.standard_normal(shape if shape else (1,))
    return draws.reshape(shape).astype(like.dtype)


def standard_gamma(shape: tuple[int, ...], concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws of shape ``shape + concentration.shape``.

    MindSpore's RandomGamma has no gradient (its bprop is not defined), so these draws cannot be
    reparameterised: the Gamma family's ``rsample`` raises instead of training silently wrong.
    """
    n = int(np.prod(shape)) if shape else 1
    draws = ops.random_gamma(Tensor(np.array([n], np.int64)), concentration.astype(ms.float32))
    out = draws.reshape(tuple(shape) + tuple(concentration.shape)).astype(concentration.dtype)
    return ops.clamp(out, float(finfo(concentration.dtype).tiny), None)


def poisson(rate: Tensor) -> Tensor:
    """One Poisson draw per element of ``rate`` (float, like torch.poisson)."""
    draws = ops.random_poisson(Tensor(np.array([1], np.int64)), rate.astype(ms.float32))
    return draws.reshape(rate.shape).astype(rate.dtype)


def categorical(probs: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Indices drawn from ``probs`` (..., K): shape ``shape + probs.shape[:-1]``, int64."""
    batch = tuple(probs.shape[:-1])
    n = int(np.prod(shape)) if shape else 1
    flat = probs.reshape(-1, probs.shape[-1]).astype(ms.float32)
    draws = ops.multinomial(flat, n, True)  # (prod(batch), n)
    return draws.T.reshape(tuple(shape) + batch).astype(ms.int64)


def xlogy(x: Tensor, y: Tensor) -> Tensor:
    """x * log(y) with 0 where x == 0: MindSpore's ops.xlogy(0, 0) is nan, torch's is 0."""
    x, y = broadcast_all(x, y)
    return ops.where(x == 0, ops.zeros_like(x), x * ops.log(ops.where(x == 0, ops.ones_like(y), y)))


def sum_rightmost(value: Tensor, dims: int) -> Tensor:
    return value.sum(tuple(range(-dims, 0))) if dims > 0 else value


def clamp_probs(probs: Tensor) -> Tensor:
    eps = float(finfo(probs.dtype).eps)
    return ops.clamp(probs, eps, 1.0 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    clamped = clamp_probs(probs)
    return ops.log(clamped) - ops.log1p(-clamped) if is_binary else ops.log(clamped)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return ops.sigmoid(logits) if is_binary else ops.softmax(logits, -1)


def lbeta(a: Tensor, b: Tensor) -> Tensor:
    return ops.lgamma(a) + ops.lgamma(b) - ops.lgamma(a + b)


def nan_like(x: Tensor) -> Tensor:
    return ops.full(tuple(x.shape), float("nan"), dtype=x.dtype)


def full_like(x: Tensor, value: float) -> Tensor:
    return ops.full(tuple(x.shape), value, dtype=x.dtype)


LOG_2 = math.log(2.0)
LOG_PI = math.log(math.pi)
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
