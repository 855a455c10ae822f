"""Distributions torch builds by transforming simpler ones (Pareto, Weibull, Kumaraswamy), and the
unit-interval and circular ones (ContinuousBernoulli, VonMises)."""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
from mindspore import Tensor, ops

from . import constraints
from ._util import EULER_GAMMA, broadcast_all, clamp_probs, logits_to_probs, nan_like, probs_to_logits
from .continuous import Exponential, Uniform
from .distribution import Distribution, ExponentialFamily, TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform

__all__ = ["ContinuousBernoulli", "Kumaraswamy", "Pareto", "VonMises", "Weibull"]


class Pareto(TransformedDistribution):
    """scale * exp(Exponential(alpha)): Pareto type 1."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _params = ("scale", "alpha")
    expand = Distribution.expand

    def __init__(self, scale: Any, alpha: Any, validate_args: Any = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha), [ExpTransform(), AffineTransform(0, self.scale)])

    @property
    def mean(self) -> Tensor:
        a = ops.clamp(self.alpha, 1.0, None)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = ops.clamp(self.alpha, 2.0, None)
        return self.scale**2 * a / ((a - 1) ** 2 * (a - 2))

    @property
    def support(self) -> Any:  # type: ignore[override]
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return ops.log(self.scale / self.alpha) + (1 + 1 / self.alpha)


class Weibull(TransformedDistribution):
    """scale * Exponential(1) ** (1 / concentration)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _params = ("scale", "concentration")
    expand = Distribution.expand

    def __init__(self, scale: Any, concentration: Any, validate_args: Any = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = 1 / self.concentration
        transforms = [PowerTransform(self.concentration_reciprocal), AffineTransform(0, self.scale)]
        super().__init__(Exponential(ops.ones_like(self.scale)), transforms)

    @property
    def mean(self) -> Tensor:
        return self.scale * ops.exp(ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration_reciprocal

    @property
    def variance(self) -> Tensor:
        r = self.concentration_reciprocal
        return self.scale**2 * (ops.exp(ops.lgamma(1 + 2 * r)) - ops.exp(2 * ops.lgamma(1 + r)))

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return EULER_GAMMA * (1 - r) + ops.log(self.scale * r) + 1


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    arg1 = 1 + n / a
    return b * ops.exp(ops.lgamma(arg1) + ops.lgamma(b) - ops.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """(1 - U ** (1 / concentration0)) ** (1 / concentration1), U uniform on (0, 1)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    _params = ("concentration1", "concentration0")
    expand = Distribution.expand

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: Any = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ops.zeros_like(self.concentration0), ops.ones_like(self.concentration0))
        transforms = [
            PowerTransform(1 / self.concentration0),
            AffineTransform(1.0, -1.0),
            PowerTransform(1 / self.concentration1),
        ]
        super().__init__(base, transforms)

    @property
    def mean(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        c1, c0 = self.concentration1, self.concentration0
        log_mode = (1 / c0) * ops.log1p(-c0) - ops.log1p(-c0 * c1)
        return ops.exp(ops.where((c0 < 1) | (c1 < 1), nan_like(log_mode), log_mode))

    @property
    def variance(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean**2

    def entropy(self) -> Tensor:
        t1, t0 = 1 - 1 / self.concentration1, 1 - 1 / self.concentration0
        h0 = ops.digamma(self.concentration0 + 1) + EULER_GAMMA
        return t0 + t1 * h0 - ops.log(self.concentration1) - ops.log(self.concentration0)


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli on [0, 1] (Loaiza-Ganem & Cunningham 2019), with torch's Taylor
    expansions near probs = 0.5 (``lims``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: Any = (0.499, 0.501), validate_args: Any = None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = clamp_probs(broadcast_all(probs)[0])
            self.logits = probs_to_logits(self.probs, is_binary=True)
        else:
            self.logits = broadcast_all(logits)[0]
            self.probs = clamp_probs(logits_to_probs(self.logits, is_binary=True))
        self._lims = lims
        super().__init__(tuple(self.probs.shape))

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return ops.where(self._outside_unstable_region(), self.probs, ops.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below = ops.where(cut <= 0.5, cut, ops.zeros_like(cut))
        above = ops.where(cut >= 0.5, cut, ops.ones_like(cut))
        log_norm = ops.log(ops.abs(ops.log1p(-cut) - ops.log(cut))) - ops.where(
            cut <= 0.5, ops.log1p(-2.0 * below), ops.log(2.0 * above - 1.0)
        )
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ops.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (ops.log1p(-cut) - ops.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x**2) * x
        return ops.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (ops.log1p(-cut) - ops.log(cut)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ops.where(self._outside_unstable_region(), var, taylor)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = ops.rand(*shape).astype(self.probs.dtype) if shape else ops.rand(1).reshape(()).astype(self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, value)
        bce = ops.clamp(logits, 0.0, None) - logits * value + ops.log1p(ops.exp(-ops.abs(logits)))
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        cdfs = (cut**value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = ops.where(self._outside_unstable_region(), cdfs, value)
        return ops.where(value <= 0.0, ops.zeros_like(value), ops.where(value >= 1.0, ops.ones_like(value), unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        inside = (ops.log1p(-cut + value * (2.0 * cut - 1.0)) - ops.log1p(-cut)) / (ops.log(cut) - ops.log1p(-cut))
        return ops.where(self._outside_unstable_region(), inside, value)

    def entropy(self) -> Tensor:
        log_p0, log_p1 = ops.log1p(-self.probs), ops.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return ContinuousBernoulli(logits=ops.broadcast_to(self.logits, tuple(batch_shape)), lims=self._lims)


class VonMises(Distribution):
    """The circular von Mises distribution (angles in radians); sampled by Best & Fisher's rejection."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    _params = ("loc", "concentration")

    def __init__(self, loc: Any, concentration: Any, validate_args: Any = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(tuple(self.loc.shape))

    def _log_i(self, order: int) -> Tensor:
        k = self.concentration
        scaled = ops.bessel_i0e(k) if order == 0 else ops.bessel_i1e(k)
        return ops.log(scaled) + k  # log I_n(k) = log(I_n(k) e^-k) + k, stable for large k

    def log_prob(self, value: Tensor) -> Tensor:
        return self.concentration * ops.cos(value - self.loc) - math.log(2 * math.pi) - self._log_i(0)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 1 - ops.exp(self._log_i(1) - self._log_i(0))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        kappa = ops.broadcast_to(self.concentration.astype(ms.float64), shape)
        tau = 1 + ops.sqrt(1 + 4 * kappa**2)
        rho = (tau - ops.sqrt(2 * tau)) / (2 * kappa)
        r = ops.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))
        x = ops.zeros(shape, ms.float64)
        done = ops.zeros(shape, ms.bool_)
        while not bool(done.all()):  # host-side loop, as torch's: draws until every element is accepted
            u1, u2, u3 = (
                ops.rand(*shape, dtype=ms.float64) if shape else ops.rand(1, dtype=ms.float64)[0] for _ in "123"
            )
            z = ops.cos(math.pi * u1)
            f = (1 + r * z) / (r + z)
            c = kappa * (r - f)
            accept = (c * (2 - c) - u2 > 0) | (ops.log(c / u2) + 1 - c >= 0)
            x = ops.where(accept & ~done, ops.sign(u3 - 0.5) * ops.acos(f), x)
            done = done | accept
        loc = self.loc.astype(ms.float64)
        return ops.stop_gradient(((x + math.pi + loc) % (2 * math.pi) - math.pi).astype(self.loc.dtype))
