"""Discrete distributions (torch.distributions API): Bernoulli, Categorical, OneHotCategorical,
Binomial, Geometric, Poisson, NegativeBinomial, Multinomial. Samples are float like torch's,
except Categorical's (int64 indices)."""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
import numpy as np
from mindspore import Tensor, ops

from . import constraints
from ._util import (
    as_shape,
    broadcast_all,
    categorical,
    finfo,
    logits_to_probs,
    nan_like,
    poisson,
    probs_to_logits,
    uniform,
    xlogy,
)
from .distribution import Distribution, ExponentialFamily
from .gamma_family import Gamma

__all__ = [
    "Bernoulli",
    "Binomial",
    "Categorical",
    "Geometric",
    "Multinomial",
    "NegativeBinomial",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Poisson",
]


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """Elementwise binary cross-entropy from logits (stable form)."""
    return ops.clamp(logits, 0.0, None) - logits * target + ops.log1p(ops.exp(-ops.abs(logits)))


class _Binary(Distribution):
    """probs or logits of a yes/no event; both available as attributes, as in torch."""

    def _set_binary(self, probs: Any, logits: Any, *others: Any) -> list[Tensor]:
        _one_of(probs, logits)
        self._use_probs = probs is not None
        values = broadcast_all(probs if self._use_probs else logits, *others)
        if self._use_probs:
            self.probs = values[0]
            self.logits = probs_to_logits(self.probs, is_binary=True)
        else:
            self.logits = values[0]
            self.probs = logits_to_probs(self.logits, is_binary=True)
        return values[1:]

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self.probs.shape)

    def _param_kwargs(self, shape: tuple[int, ...]) -> dict[str, Tensor]:
        key = "probs" if self._use_probs else "logits"
        return {key: ops.broadcast_to(getattr(self, key), shape)}


class Bernoulli(_Binary, ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        self._set_binary(probs, logits)
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).astype(self.probs.dtype)
        return ops.where(self.probs == 0.5, nan_like(mode), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        u = uniform(self._extended_shape(sample_shape), self.probs)
        return ops.stop_gradient((u < self.probs).astype(self.probs.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = Tensor(np.arange(2), self.probs.dtype).reshape((-1,) + (1,) * len(self.batch_shape))
        return ops.broadcast_to(values, (2,) + self.batch_shape) if expand else values

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return Bernoulli(**self._param_kwargs(as_shape(batch_shape)))


class Geometric(_Binary):
    """Number of failures before the first success."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        self._set_binary(probs, logits)
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return ops.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        u = uniform(self._extended_shape(sample_shape), self.probs)
        return ops.stop_gradient(ops.floor(ops.log(u) / ops.log1p(-self.probs)))

    def log_prob(self, value: Tensor) -> Tensor:
        value, probs = broadcast_all(value, self.probs)
        fail = ops.where((probs == 1) & (value == 0), ops.zeros_like(probs), probs)
        return value * ops.log1p(-fail) + ops.log(probs)

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs) / self.probs

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        return Geometric(**self._param_kwargs(as_shape(batch_shape)))


class Binomial(_Binary):
    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None, validate_args: Any = None):
        (count,) = self._set_binary(probs, logits, total_count)
        self.total_count = count.astype(self.probs.dtype)
        super().__init__(tuple(self.probs.shape))

    @property
    def support(self) -> Any:  # type: ignore[override]
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ops.minimum(ops.floor((self.total_count + 1) * self.probs), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Counts of successes among total_count trials (each trial one uniform draw)."""
        shape = self._extended_shape(sample_shape)
        n_max = int(self.total_count.max())
        trials = uniform((n_max,) + shape, self.probs) < self.probs
        index = Tensor(np.arange(n_max), self.probs.dtype).reshape((n_max,) + (1,) * len(shape))
        counted = trials & (index < self.total_count)
        return ops.stop_gradient(counted.astype(self.probs.dtype).sum(0))

    def log_prob(self, value: Tensor) -> Tensor:
        n, logits = self.total_count, self.logits
        log_factorial_n = ops.lgamma(n + 1)
        log_factorial_k = ops.lgamma(value + 1)
        log_factorial_nmk = ops.lgamma(n - value + 1)
        clamp_by_zero = (ops.clamp(logits, 0.0, None) + logits - ops.clamp(logits, None, 0.0)) / 2
        normalize = n * clamp_by_zero + n * ops.log1p(ops.exp(-ops.abs(logits))) - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize

    def _homogeneous_count(self, what: str) -> int:
        n = int(self.total_count.max())
        if int(self.total_count.min()) != n:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return n

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self._homogeneous_count("enumerate_support")
        values = Tensor(np.arange(n + 1), self.probs.dtype).reshape((-1,) + (1,) * len(self.batch_shape))
        return ops.broadcast_to(values, (n + 1,) + self.batch_shape) if expand else values

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ops.exp(log_prob) * log_prob).sum(0)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        shape = as_shape(batch_shape)
        return Binomial(ops.broadcast_to(self.total_count, shape), **self._param_kwargs(shape))


class NegativeBinomial(_Binary):
    """Number of successes before total_count failures (success probability probs)."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None, validate_args: Any = None):
        (count,) = self._set_binary(probs, logits, total_count)
        self.total_count = count.astype(self.probs.dtype)
        super().__init__(tuple(self.probs.shape))

    @property
    def mean(self) -> Tensor:
        return self.total_count * ops.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ops.clamp(ops.floor((self.total_count - 1) * ops.exp(self.logits)), 0.0, None)

    @property
    def variance(self) -> Tensor:
        return self.mean / ops.sigmoid(-self.logits)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        # a Poisson with a Gamma-drawn rate
        rate = Gamma(self.total_count, ops.exp(-self.logits)).sample(sample_shape)
        return ops.stop_gradient(poisson(rate))

    def log_prob(self, value: Tensor) -> Tensor:
        n = self.total_count
        unnormalized = n * ops.logsigmoid(-self.logits) + value * ops.logsigmoid(self.logits)
        normalization = -ops.lgamma(n + value) + ops.lgamma(1.0 + value) + ops.lgamma(n)
        normalization = ops.where(n + value == 0.0, ops.zeros_like(normalization), normalization)
        return unnormalized - normalization

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        shape = as_shape(batch_shape)
        return NegativeBinomial(ops.broadcast_to(self.total_count, shape), **self._param_kwargs(shape))


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _params = ("rate",)

    def __init__(self, rate: Any, validate_args: Any = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape))

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return ops.floor(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        rate = ops.broadcast_to(self.rate, self._extended_shape(sample_shape))
        return ops.stop_gradient(poisson(rate))

    def log_prob(self, value: Tensor) -> Tensor:
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - ops.lgamma(value + 1)


class Categorical(Distribution):
    """One of K categories; ``probs`` (normalised here) or ``logits`` (unnormalised log-probabilities)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        _one_of(probs, logits)
        self._use_probs = probs is not None
        if self._use_probs:
            probs = probs if isinstance(probs, Tensor) else Tensor(np.asarray(probs, np.float32))
            self.probs = probs / probs.sum(-1, keepdims=True)
            self.logits = probs_to_logits(self.probs)
        else:
            logits = logits if isinstance(logits, Tensor) else Tensor(np.asarray(logits, np.float32))
            self.logits = logits - ops.logsumexp(logits, -1, keepdim=True)
            self.probs = logits_to_probs(self.logits)
        self._num_events = self.probs.shape[-1]
        super().__init__(tuple(self.probs.shape[:-1]))

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self.probs.shape)

    @property
    def support(self) -> Any:  # type: ignore[override]
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return ops.full(self.batch_shape, math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1).astype(ms.int64)

    @property
    def variance(self) -> Tensor:
        return ops.full(self.batch_shape, math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return ops.stop_gradient(categorical(self.probs, as_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        value = value.astype(ms.int64).expand_dims(-1)
        shape = np.broadcast_shapes(tuple(value.shape[:-1]), self.batch_shape)
        value = ops.broadcast_to(value, tuple(shape) + (1,))
        log_pmf = ops.broadcast_to(self.logits, tuple(shape) + (self._num_events,))
        return ops.gather_elements(log_pmf, -1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = ops.clamp(self.logits, float(finfo(self.logits.dtype).min), None)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = Tensor(np.arange(self._num_events), ms.int64).reshape((-1,) + (1,) * len(self.batch_shape))
        return ops.broadcast_to(values, (self._num_events,) + self.batch_shape) if expand else values

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        shape = as_shape(batch_shape) + (self._num_events,)
        if self._use_probs:
            return type(self)(probs=ops.broadcast_to(self.probs, shape))
        return type(self)(logits=ops.broadcast_to(self.logits, shape))


class OneHotCategorical(Distribution):
    """Categorical whose samples and values are one-hot vectors (event shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.probs, self.logits = self._categorical.probs, self._categorical.logits
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:])

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return self._one_hot(self._categorical.mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def _one_hot(self, index: Tensor) -> Tensor:
        on, off = ops.ones((), self.probs.dtype), ops.zeros((), self.probs.dtype)
        return ops.one_hot(index, self._categorical._num_events, on, off)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return ops.stop_gradient(self._one_hot(self._categorical.sample(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = ops.eye(n, n, self.probs.dtype).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return ops.broadcast_to(values, (n,) + self.batch_shape + (n,)) if expand else values

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        cat = self._categorical.expand(batch_shape)
        key = "probs" if cat._use_probs else "logits"
        return type(self)(**{key: getattr(cat, key)})


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """rsample: the one-hot draw forward, the probabilities' gradient backward (straight-through)."""

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - ops.stop_gradient(probs))


class Multinomial(Distribution):
    """Counts of total_count draws from a Categorical (event shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None, validate_args: Any = None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs, logits)
        self._binomial = Binomial(total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:])

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        index = self._categorical.sample((self.total_count,) + as_shape(sample_shape))
        k = self._categorical._num_events
        on, off = ops.ones((), self.probs.dtype), ops.zeros((), self.probs.dtype)
        return ops.stop_gradient(ops.one_hot(index, k, on, off).sum(0))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = ops.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ops.lgamma(value + 1).sum(-1)
        logits = ops.where((value == 0) & (logits == -math.inf), ops.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ops.exp(self._binomial.log_prob(support))
        weights = ops.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum((0, -1))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        cat = self._categorical.expand(batch_shape)
        key = "probs" if cat._use_probs else "logits"
        return Multinomial(self.total_count, **{key: getattr(cat, key)})
