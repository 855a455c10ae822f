"""The Distribution base class, Independent and TransformedDistribution (torch.distributions API).

Properties stay properties (``d.mean``, ``d.stddev``, ``d.batch_shape``) and ``rsample`` is
reparameterised, so converted code keeps torch's calls unchanged. PyNative gives torch's values and
gradients; in GRAPH_MODE a distribution built inside ``construct`` is a Python object that
MindSpore interprets: the values are right but no gradient flows through it (measured: 0.0).
"""

from __future__ import annotations

import warnings
from typing import Any

import mindspore as ms
from mindspore import Tensor, ops

from . import constraints
from ._util import as_shape, broadcast_shape, sum_rightmost
from .transforms import Transform
from .transforms_compose import ComposeTransform

__all__ = ["Distribution", "ExponentialFamily", "Independent", "TransformedDistribution"]


class Distribution:
    """Base class: subclasses set ``_batch_shape`` / ``_event_shape`` and the methods they support."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: Any = None
    _validate_args = False
    # Constructor parameters, in order, that expand() broadcasts to a new batch shape.
    _params: tuple[str, ...] = ()

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: Any = None) -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        _warn_in_graph_mode()

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Argument validation is not done here (torch validates by default): a no-op."""

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> tuple[int, ...]:
        return as_shape(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Draws without gradient (``rsample`` with the gradient stopped, where there is one)."""
        if not self.has_rsample:
            raise NotImplementedError(f"{type(self).__name__}.sample is not implemented")
        return ops.stop_gradient(self.rsample(sample_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler (rsample)")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.cdf is not implemented")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.icdf is not implemented")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.enumerate_support is not implemented")

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mean is not implemented")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mode is not implemented")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.variance is not implemented")

    @property
    def stddev(self) -> Tensor:
        return ops.sqrt(self.variance)

    def perplexity(self) -> Tensor:
        return ops.exp(self.entropy())

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """The same distribution with its parameters broadcast to ``batch_shape``."""
        batch_shape = as_shape(batch_shape)
        values = []
        for name in self._params:
            v = getattr(self, name)
            if isinstance(v, Tensor):
                v = ops.broadcast_to(v, batch_shape + tuple(v.shape[len(self._batch_shape) :]))
            values.append(v)
        return type(self)(*values)

    # Converted code may have taken ``d.expand(shape)`` for Tensor.expand (→ broadcast_to).
    broadcast_to = expand

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}: {tuple(getattr(getattr(self, n), 'shape', ()))}" for n in self._params)
        return f"{type(self).__name__}({shapes})"


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (torch uses it for Bregman entropy)."""


class Independent(Distribution):
    """Reinterprets the rightmost ``reinterpreted_batch_ndims`` batch dims of ``base_distribution`` as event dims."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args: Any = None):
        n = int(reinterpreted_batch_ndims)
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        if n > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape)")
        event_dim = n + len(base_distribution.event_shape)
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        super().__init__(shape[: len(shape) - event_dim], shape[len(shape) - event_dim :])

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @property
    def support(self) -> Any:  # type: ignore[override]
        return constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims)

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        base_shape = as_shape(batch_shape) + self.event_shape[: self.reinterpreted_batch_ndims]
        return Independent(self.base_dist.expand(base_shape), self.reinterpreted_batch_ndims)


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (log_prob by the change of variables)."""

    def __init__(self, base_distribution: Distribution, transforms: Any, validate_args: Any = None) -> None:
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(transforms)
        transform = ComposeTransform(self.transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        forward_shape = transform.forward_shape(base_shape)
        expanded = transform.inverse_shape(forward_shape)
        if tuple(expanded) != base_shape:
            cut = len(expanded) - len(base_distribution.event_shape)
            base_distribution = base_distribution.expand(tuple(expanded[:cut]))
        extra = transform.domain.event_dim - len(base_distribution.event_shape)
        if extra > 0:
            base_distribution = Independent(base_distribution, extra)
        self.base_dist: Any = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, len(base_distribution.event_shape) + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:])

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def support(self) -> Any:  # type: ignore[override]
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    def sample(self, sample_shape: Any = ()) -> Tensor:
        x = self.base_dist.sample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return ops.stop_gradient(x)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        base = sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))
        return log_prob + base

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        sign: Any = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for t in reversed(self.transforms):
            value = t.inv(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        shape = as_shape(batch_shape) + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        cut = len(shape) - len(self.base_dist.event_shape)
        return TransformedDistribution(self.base_dist.expand(tuple(shape[:cut])), self.transforms)


_GRAPH_MODE_WARNING = (
    "torch2ms.runtime distributions built inside a GRAPH_MODE construct (or an @mindspore.jit function) "
    "give the right values but pass no gradient: MindSpore interprets the Python object (measured: 0.0 "
    "for loc and scale). Build and train with them in PyNative mode."
)


def _warn_in_graph_mode() -> None:
    """Once per process: GRAPH_MODE runs this constructor as interpreted Python at run time."""
    if ms.get_context("mode") == ms.GRAPH_MODE:
        warnings.warn(_GRAPH_MODE_WARNING, RuntimeWarning, stacklevel=3)


def batch_of(*params: Tensor, event_dims: int = 0) -> tuple[int, ...]:
    """The batch shape of parameters whose rightmost ``event_dims`` dims are event dims."""
    return broadcast_shape(*[tuple(p.shape[: p.ndim - event_dims]) for p in params])
