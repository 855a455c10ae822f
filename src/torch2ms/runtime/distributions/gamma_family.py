"""Distributions drawn through Gamma variates: Gamma, Chi2, InverseGamma, Beta, Dirichlet, StudentT,
FisherSnedecor.

MindSpore's RandomGamma has no gradient, so these have ``sample`` but no ``rsample`` (torch
reparameterises them): ``rsample`` raises with what to do instead, never trains silently wrong.
"""

from __future__ import annotations

import math
from typing import Any

from mindspore import Tensor, ops

from . import constraints
from ._util import LOG_PI, as_shape, broadcast_all, finfo, lbeta, nan_like, standard_gamma, standard_normal, xlogy
from .distribution import Distribution, ExponentialFamily, batch_of

__all__ = ["Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "InverseGamma", "StudentT"]

_NO_RSAMPLE = (
    "{} has no rsample on MindSpore: its draws come from ops.random_gamma, which has no gradient. "
    "Use .sample() (no gradient), or reparameterise another way (e.g. a Normal/LogNormal surrogate)."
)


class _GammaDrawn(Distribution):
    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotImplementedError(_NO_RSAMPLE.format(type(self).__name__))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return ops.stop_gradient(self._draw(as_shape(sample_shape)))

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        raise NotImplementedError


class Gamma(_GammaDrawn, ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    _params: tuple[str, ...] = ("concentration", "rate")

    def __init__(self, concentration: Any, rate: Any, validate_args: Any = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(tuple(self.concentration.shape))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ops.clamp((self.concentration - 1) / self.rate, 0.0, None)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate**2

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        draws = standard_gamma(shape, self.concentration) / self.rate
        return ops.clamp(draws, float(finfo(draws.dtype).tiny), None)

    def log_prob(self, value: Tensor) -> Tensor:
        c, r = self.concentration, self.rate
        return xlogy(c, r) + xlogy(c - 1, value) - r * value - ops.lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        return ops.igamma(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - ops.log(self.rate) + ops.lgamma(c) + (1.0 - c) * ops.digamma(c)


class Chi2(Gamma):
    """Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}
    _params = ("df",)

    def __init__(self, df: Any, validate_args: Any = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, ops.full_like(df, 0.5))

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class InverseGamma(_GammaDrawn):
    """1 / Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    _params = ("concentration", "rate")

    def __init__(self, concentration: Any, rate: Any, validate_args: Any = None) -> None:
        self.base_dist = Gamma(concentration, rate)
        self.concentration, self.rate = self.base_dist.concentration, self.base_dist.rate
        super().__init__(self.base_dist.batch_shape)

    @property
    def mean(self) -> Tensor:
        m = self.rate / (self.concentration - 1)
        return ops.where(self.concentration <= 1, ops.full_like(m, math.inf), m)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        v = self.rate**2 / ((c - 1) ** 2 * (c - 2))
        return ops.where(c <= 2, ops.full_like(v, math.inf), v)

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        return 1 / self.base_dist._draw(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return self.base_dist.log_prob(1 / value) - 2 * ops.log(value)

    def cdf(self, value: Tensor) -> Tensor:
        return 1 - self.base_dist.cdf(1 / value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + ops.log(self.rate) + ops.lgamma(c) - (1 + c) * ops.digamma(c)


class Dirichlet(_GammaDrawn, ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    _params = ("concentration",)

    def __init__(self, concentration: Any, validate_args: Any = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:]))

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        g = standard_gamma(shape, self.concentration)
        info = finfo(g.dtype)
        return ops.clamp(g / g.sum(-1, keepdims=True), float(info.tiny), float(1 - info.eps))

    def log_prob(self, value: Tensor) -> Tensor:
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + ops.lgamma(c.sum(-1)) - ops.lgamma(c).sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdims=True)

    @property
    def mode(self) -> Tensor:
        c = self.concentration
        m = ops.clamp(c - 1, 0.0, None)
        m = m / m.sum(-1, keepdims=True)
        k = c.shape[-1]
        all_below = (c < 1).all(-1, keep_dims=True)
        one_hot = ops.one_hot(c.argmax(-1), k, ops.ones((), c.dtype), ops.zeros((), c.dtype))
        return ops.where(ops.broadcast_to(all_below, m.shape), one_hot, m)

    @property
    def variance(self) -> Tensor:
        c0 = self.concentration.sum(-1, keepdims=True)
        return self.concentration * (c0 - self.concentration) / (c0**2 * (c0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k, a0 = c.shape[-1], c.sum(-1)
        return (
            ops.lgamma(c).sum(-1) - ops.lgamma(a0) - (k - a0) * ops.digamma(a0) - ((c - 1.0) * ops.digamma(c)).sum(-1)
        )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return Dirichlet(ops.broadcast_to(self.concentration, as_shape(batch_shape) + self.event_shape))


class Beta(_GammaDrawn, ExponentialFamily):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    _params = ("concentration1", "concentration0")

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: Any = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(ops.stack([self.concentration1, self.concentration0], -1))
        super().__init__(tuple(self.concentration1.shape))

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total**2 * (total + 1))

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        return self._dirichlet._draw(shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        return self._dirichlet.log_prob(ops.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()


class StudentT(_GammaDrawn):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _params = ("df", "loc", "scale")

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: Any = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape))

    @property
    def mean(self) -> Tensor:
        return ops.where(self.df > 1, self.loc, nan_like(self.loc))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        v = self.scale**2 * df / (df - 2)
        v = ops.where((df <= 2) & (df > 1), ops.full_like(v, math.inf), v)
        return ops.where(df <= 1, nan_like(v), v)

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        x = standard_normal(shape + self.batch_shape, self.df)
        z = self._chi2._draw(shape)
        return self.loc + self.scale * x * ops.rsqrt(z / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        y = (value - self.loc) / self.scale
        z = (
            ops.log(self.scale)
            + 0.5 * ops.log(self.df)
            + 0.5 * LOG_PI
            + ops.lgamma(0.5 * self.df)
            - ops.lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * ops.log1p(y**2.0 / self.df) - z

    def entropy(self) -> Tensor:
        df = self.df
        half = ops.full_like(df, 0.5)
        return (
            ops.log(self.scale)
            + 0.5 * (df + 1) * (ops.digamma(0.5 * (df + 1)) - ops.digamma(0.5 * df))
            + 0.5 * ops.log(df)
            + lbeta(0.5 * df, half)
        )


class FisherSnedecor(_GammaDrawn):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    _params = ("df1", "df2")

    def __init__(self, df1: Any, df2: Any, validate_args: Any = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1, self._gamma2 = Gamma(self.df1 * 0.5, self.df1), Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_of(self.df1))

    @property
    def mean(self) -> Tensor:
        df2 = self.df2
        return ops.where(df2 > 2, df2 / (df2 - 2), nan_like(df2))

    @property
    def mode(self) -> Tensor:
        m = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ops.where(self.df1 > 2, m, nan_like(m))

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        v = 2 * df2**2 * (df1 + df2 - 2) / (df1 * (df2 - 2) ** 2 * (df2 - 4))
        return ops.where(df2 > 4, v, nan_like(v))

    def _draw(self, shape: tuple[int, ...]) -> Tensor:
        info = finfo(self.df1.dtype)
        x1 = ops.clamp(self._gamma1._draw(shape), float(info.tiny), None)
        x2 = ops.clamp(self._gamma2._draw(shape), float(info.tiny), None)
        return ops.clamp(x1 / x2, float(info.tiny), None)

    def log_prob(self, value: Tensor) -> Tensor:
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = ops.lgamma(ct1 + ct2) - ops.lgamma(ct1) - ops.lgamma(ct2)
        t2 = ct1 * ops.log(ct3) + (ct1 - 1) * ops.log(value)
        t3 = (ct1 + ct2) * ops.log1p(ct3 * value)
        return t1 + t2 - t3
