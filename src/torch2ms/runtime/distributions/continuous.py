"""Univariate continuous distributions with torch.distributions' parameters, properties and methods."""

from __future__ import annotations

import math
from typing import Any

from mindspore import Tensor, ops

from . import constraints
from ._util import (
    EULER_GAMMA,
    LOG_2,
    LOG_PI,
    LOG_SQRT_2PI,
    broadcast_all,
    full_like,
    nan_like,
    standard_normal,
    uniform,
)
from .distribution import Distribution, ExponentialFamily

__all__ = ["Cauchy", "Exponential", "Gumbel", "HalfCauchy", "HalfNormal", "Laplace", "LogNormal", "Normal", "Uniform"]


class Normal(ExponentialFamily):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale**2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        return -((value - self.loc) ** 2) / (2 * self.variance) - ops.log(self.scale) - LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        return 0.5 * (1 + ops.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * ops.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + LOG_SQRT_2PI + ops.log(self.scale)


class LogNormal(Distribution):
    """exp(Normal(loc, scale))."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.base_dist = Normal(loc, scale)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.base_dist.batch_shape)

    @property
    def mean(self) -> Tensor:
        return ops.exp(self.loc + self.scale**2 / 2)

    @property
    def mode(self) -> Tensor:
        return ops.exp(self.loc - self.scale**2)

    @property
    def variance(self) -> Tensor:
        s2 = self.scale**2
        return ops.expm1(s2) * ops.exp(2 * self.loc + s2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return ops.exp(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        log_v = ops.log(value)
        return self.base_dist.log_prob(log_v) - log_v

    def cdf(self, value: Tensor) -> Tensor:
        return self.base_dist.cdf(ops.log(value))

    def icdf(self, value: Tensor) -> Tensor:
        return ops.exp(self.base_dist.icdf(value))

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class HalfNormal(Distribution):
    """|Normal(0, scale)|."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("scale",)

    def __init__(self, scale: Any, validate_args: Any = None) -> None:
        (self.scale,) = broadcast_all(scale)
        self.base_dist = Normal(ops.zeros_like(self.scale), self.scale)
        super().__init__(tuple(self.scale.shape))

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.scale**2 * (1 - 2 / math.pi)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return ops.abs(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        lp = self.base_dist.log_prob(value) + LOG_2
        return ops.where(value >= 0, lp, full_like(lp, -math.inf))

    def cdf(self, value: Tensor) -> Tensor:
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - LOG_2


class Uniform(Distribution):
    arg_constraints = {"low": constraints.real, "high": constraints.real}
    has_rsample = True
    _params = ("low", "high")

    def __init__(self, low: Any, high: Any, validate_args: Any = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(tuple(self.low.shape))

    @property
    def support(self) -> Any:  # type: ignore[override]
        return constraints.half_open_interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return nan_like(self.high)

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = ops.rand(*shape).astype(self.low.dtype) if shape else ops.rand(1).reshape(()).astype(self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        inside = ((self.low <= value) & (self.high > value)).astype(self.low.dtype)
        return ops.log(inside) - ops.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        return ops.clamp((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return ops.log(self.high - self.low)


class Exponential(ExponentialFamily):
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("rate",)

    def __init__(self, rate: Any, validate_args: Any = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self) -> Tensor:
        return 1 / self.rate

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return 1 / self.rate

    @property
    def variance(self) -> Tensor:
        return self.rate ** (-2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = uniform(self._extended_shape(sample_shape), self.rate)
        return -ops.log1p(-u) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        return ops.log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        return 1 - ops.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -ops.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - ops.log(self.rate)


class Laplace(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale**2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = uniform(self._extended_shape(sample_shape), self.loc, -1.0, 1.0)
        return self.loc - self.scale * ops.sign(u) * ops.log1p(-ops.abs(u))

    def log_prob(self, value: Tensor) -> Tensor:
        return -ops.log(2 * self.scale) - ops.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        return 0.5 - 0.5 * ops.sign(value - self.loc) * ops.expm1(-ops.abs(value - self.loc) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * ops.sign(term) * ops.log1p(-2 * ops.abs(term))

    def entropy(self) -> Tensor:
        return 1 + ops.log(2 * self.scale)


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self) -> Tensor:
        return nan_like(self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return full_like(self.loc, math.inf)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(uniform(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        return -LOG_PI - ops.log(self.scale) - ops.log1p(((value - self.loc) / self.scale) ** 2)

    def cdf(self, value: Tensor) -> Tensor:
        return ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return ops.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + ops.log(self.scale)


class HalfCauchy(Distribution):
    """|Cauchy(0, scale)|."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("scale",)

    def __init__(self, scale: Any, validate_args: Any = None) -> None:
        (self.scale,) = broadcast_all(scale)
        self.base_dist = Cauchy(ops.zeros_like(self.scale), self.scale)
        super().__init__(tuple(self.scale.shape))

    @property
    def mean(self) -> Tensor:
        return full_like(self.scale, math.inf)

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return full_like(self.scale, math.inf)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return ops.abs(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        lp = self.base_dist.log_prob(value) + LOG_2
        return ops.where(value >= 0, lp, full_like(lp, -math.inf))

    def cdf(self, value: Tensor) -> Tensor:
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - LOG_2


class Gumbel(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape))

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev**2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.icdf(uniform(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        z = (value - self.loc) / self.scale
        return -(z + ops.exp(-z)) - ops.log(self.scale)

    def cdf(self, value: Tensor) -> Tensor:
        return ops.exp(-ops.exp(-(value - self.loc) / self.scale))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc - self.scale * ops.log(-ops.log(value))

    def entropy(self) -> Tensor:
        return ops.log(self.scale) + (1 + EULER_GAMMA)
