"""torch.distributions.transforms: invertible maps with log-det-Jacobians, on MindSpore tensors.

``t(x)``, ``t.inv(y)`` (``t.inv`` is itself a Transform), ``t.log_abs_det_jacobian(x, y)``,
``domain`` / ``codomain`` constraints (their ``event_dim``), ``forward_shape`` / ``inverse_shape``.
No caching (``cache_size`` is accepted and ignored: recomputing gives the same numbers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mindspore import Tensor, ops

from . import constraints
from ._util import as_tensor, clamp_probs, finfo, sum_rightmost

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
]


class Transform:
    """Base class: subclasses define ``_call``, ``_inverse`` and ``log_abs_det_jacobian``."""

    bijective = False
    sign: Any = 1
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        self._cache_size = cache_size

    @property
    def event_dim(self) -> int:
        return max(self.domain.event_dim, self.codomain.event_dim)

    @property
    def inv(self) -> Transform:
        return _InverseTransform(self)

    def __call__(self, x: Tensor) -> Tensor:
        return self._call(x)

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return tuple(shape)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return tuple(shape)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self._inv = transform
        self.bijective = transform.bijective

    @property
    def inv(self) -> Transform:
        return self._inv

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self._inv.sign

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inverse(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)


class ExpTransform(Transform):
    bijective = True
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return ops.exp(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    bijective = True
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.exponent = as_tensor(exponent)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return ops.sign(self.exponent)

    def _call(self, x: Tensor) -> Tensor:
        return ops.pow(x, self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.pow(y, 1.0 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return ops.log(ops.abs(self.exponent * y / x))


class SigmoidTransform(Transform):
    bijective = True
    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return clamp_probs(ops.sigmoid(x))

    def _inverse(self, y: Tensor) -> Tensor:
        y = clamp_probs(y)
        return ops.log(y) - ops.log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -ops.softplus(-x) - ops.softplus(x)


class SoftplusTransform(Transform):
    bijective = True
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return ops.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y + ops.log(-ops.expm1(-y))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -ops.softplus(-x)


class TanhTransform(Transform):
    bijective = True
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return ops.tanh(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.atanh(y)  # not clamped, as in torch

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - ops.softplus(-2.0 * x))


class AbsTransform(Transform):
    codomain = constraints.nonnegative

    def _call(self, x: Tensor) -> Tensor:
        return ops.abs(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self._event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    codomain = domain  # type: ignore[assignment]

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return ops.sign(self.scale) if isinstance(self.scale, Tensor) else (1 if self.scale > 0 else -1)

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        scale = self.scale
        if isinstance(scale, Tensor):
            result = ops.broadcast_to(ops.log(ops.abs(scale)), tuple(x.shape))
        else:
            result = ops.full(tuple(x.shape), math.log(abs(scale)), dtype=x.dtype)
        return sum_rightmost(result, self._event_dim)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        extra = [tuple(getattr(v, "shape", ())) for v in (self.loc, self.scale)]
        return tuple(np.broadcast_shapes(tuple(shape), *extra))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        probs = ops.exp(x - x.max(-1, keepdims=True))
        return probs / probs.sum(-1, keepdims=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.log(y)


class StickBreakingTransform(Transform):
    """Unconstrained K-1 vector → K-simplex (stick breaking), as torch's."""

    bijective = True
    domain = constraints.real_vector
    codomain = constraints.simplex

    @staticmethod
    def _offset_log(x: Tensor, k: int) -> Tensor:
        return ops.log(Tensor(np.arange(k, 0, -1).astype(np.float32)).astype(x.dtype))

    def _call(self, x: Tensor) -> Tensor:
        info = finfo(x.dtype)
        z = ops.clamp(ops.sigmoid(x - self._offset_log(x, x.shape[-1])), float(info.tiny), float(1 - info.eps))
        z_cumprod = ops.cumprod(1 - z, -1)
        ones = ops.ones(tuple(x.shape[:-1]) + (1,), x.dtype)
        return ops.cat([z, ones], -1) * ops.cat([ones, z_cumprod], -1)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        sf = ops.clamp(1 - ops.cumsum(y_crop, -1), float(finfo(y.dtype).tiny), None)
        return ops.log(y_crop) - ops.log(sf) + self._offset_log(y, y_crop.shape[-1])

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - self._offset_log(x, x.shape[-1])
        return (-x + ops.logsigmoid(x) + ops.log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return ops.tril(x, -1) + ops.diag_embed(ops.exp(x.diagonal(0, -2, -1)))

    def _inverse(self, y: Tensor) -> Tensor:
        return ops.tril(y, -1) + ops.diag_embed(ops.log(y.diagonal(0, -2, -1)))


class PositiveDefiniteTransform(Transform):
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        low = LowerCholeskyTransform()(x)
        return ops.matmul(low, low.swapaxes(-1, -2))

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(ops.cholesky(y))


class ReshapeTransform(Transform):
    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if int(np.prod(self.in_shape)) != int(np.prod(self.out_shape)):
            raise ValueError("in_shape, out_shape have different numbers of elements")

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x: Tensor) -> Tensor:
        return x.reshape(tuple(x.shape[: x.ndim - len(self.in_shape)]) + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.reshape(tuple(y.shape[: y.ndim - len(self.out_shape)]) + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return ops.zeros(tuple(x.shape[: x.ndim - len(self.in_shape)]), x.dtype)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return tuple(shape[: len(shape) - len(self.in_shape)]) + self.out_shape

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return tuple(shape[: len(shape) - len(self.out_shape)]) + self.in_shape


class IndependentTransform(Transform):
    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = base_transform, reinterpreted_batch_ndims
        self.bijective = base_transform.bijective

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)


class CumulativeDistributionTransform(Transform):
    """x → distribution.cdf(x), onto the unit interval."""

    bijective = True
    codomain = constraints.unit_interval

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)
