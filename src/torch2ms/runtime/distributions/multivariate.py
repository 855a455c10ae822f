"""Multivariate and compound distributions: MultivariateNormal, LowRankMultivariateNormal,
MixtureSameFamily, LogisticNormal, RelaxedBernoulli, RelaxedOneHotCategorical."""

from __future__ import annotations

import math
from typing import Any

import mindspore as ms
from mindspore import Tensor, ops

from . import constraints
from ._util import as_shape, broadcast_all, broadcast_shape, clamp_probs, uniform
from .continuous import Normal
from .discrete import Categorical, _Binary
from .distribution import Distribution, TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform, StickBreakingTransform

__all__ = [
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "MultivariateNormal",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
]


def _matvec(mat: Tensor, vec: Tensor) -> Tensor:
    return ops.matmul(mat, vec.expand_dims(-1)).squeeze(-1)


class MultivariateNormal(Distribution):
    """Normal with a full covariance, given by exactly one of covariance_matrix, precision_matrix, scale_tril."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Any = None,
        precision_matrix: Any = None,
        scale_tril: Any = None,
        validate_args: Any = None,
    ) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if scale_tril is not None:
            tril = scale_tril
        elif covariance_matrix is not None:
            tril = ops.cholesky(covariance_matrix)
        else:
            tril = ops.cholesky(ops.inverse(precision_matrix))
        self._unbroadcasted_scale_tril = tril
        batch = broadcast_shape(tuple(tril.shape[:-2]), tuple(loc.shape[:-1]))
        self.loc = ops.broadcast_to(loc, batch + tuple(loc.shape[-1:]))
        super().__init__(batch, tuple(loc.shape[-1:]))

    @property
    def scale_tril(self) -> Tensor:
        return ops.broadcast_to(self._unbroadcasted_scale_tril, self.batch_shape + self.event_shape * 2)

    @property
    def covariance_matrix(self) -> Tensor:
        tril = self._unbroadcasted_scale_tril
        return ops.broadcast_to(ops.matmul(tril, tril.swapaxes(-1, -2)), self.batch_shape + self.event_shape * 2)

    @property
    def precision_matrix(self) -> Tensor:
        return ops.inverse(self.covariance_matrix)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return ops.broadcast_to((self._unbroadcasted_scale_tril**2).sum(-1), self.batch_shape + self.event_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = ops.standard_normal(shape).astype(self.loc.dtype)
        return self.loc + _matvec(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return ops.log(self._unbroadcasted_scale_tril.diagonal(0, -2, -1)).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        diff = value - self.loc
        whitened = _matvec(ops.inverse(self._unbroadcasted_scale_tril), diff)  # L^-1 (x - loc)
        mahalanobis = (whitened**2).sum(-1)
        k = self.event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + mahalanobis) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self.event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return ops.broadcast_to(h, self.batch_shape) if self.batch_shape else h

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        shape = as_shape(batch_shape)
        loc = ops.broadcast_to(self.loc, shape + self.event_shape)
        return MultivariateNormal(
            loc, scale_tril=ops.broadcast_to(self._unbroadcasted_scale_tril, shape + self.event_shape * 2)
        )


class LowRankMultivariateNormal(MultivariateNormal):
    """Covariance cov_factor @ cov_factor.T + diag(cov_diag) (computed as a full covariance here)."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: Any = None) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        self.cov_factor, self.cov_diag = cov_factor, cov_diag
        cov = ops.matmul(cov_factor, cov_factor.swapaxes(-1, -2)) + ops.diag_embed(cov_diag)
        super().__init__(loc, covariance_matrix=cov)

    @property
    def variance(self) -> Tensor:
        v = (self.cov_factor**2).sum(-1) + self.cov_diag
        return ops.broadcast_to(v, self.batch_shape + self.event_shape)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        shape = as_shape(batch_shape) + self.event_shape
        factor = ops.broadcast_to(self.cov_factor, shape + tuple(self.cov_factor.shape[-1:]))
        return LowRankMultivariateNormal(
            ops.broadcast_to(self.loc, shape), factor, ops.broadcast_to(self.cov_diag, shape)
        )


class MixtureSameFamily(Distribution):
    """A mixture: a Categorical over the last batch dim of ``component_distribution``."""

    def __init__(
        self, mixture_distribution: Categorical, component_distribution: Distribution, validate_args: Any = None
    ):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = mixture_distribution.probs.shape[-1]
        if component_distribution.batch_shape[-1] != self._num_component:
            raise ValueError("mixture_distribution components do not match component_distribution batch shape")
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(tuple(component_distribution.batch_shape[:-1]), component_distribution.event_shape)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    def _pad(self, x: Tensor) -> Tensor:
        return x.expand_dims(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad = 0 if cat_batch_ndims == 1 else len(self.batch_shape) - cat_batch_ndims
        shape = tuple(x.shape[:-1]) + (1,) * pad + tuple(x.shape[-1:]) + (1,) * self._event_ndims
        return x.reshape(shape)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        axis = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(axis)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)) ** 2).sum(axis)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        return (self.component_distribution.cdf(self._pad(x)) * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix = ops.log_softmax(self.mixture_distribution.logits, -1)
        return ops.logsumexp(log_prob_x + log_mix, -1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = as_shape(sample_shape)
        gather_dim = len(shape) + len(self.batch_shape)
        mix = self.mixture_distribution.sample(shape)
        comp = self.component_distribution.sample(shape)
        index = mix.reshape(tuple(mix.shape) + (1,) * (self._event_ndims + 1))
        index = ops.broadcast_to(index, tuple(mix.shape) + (1,) + self.event_shape)
        return ops.stop_gradient(ops.gather_elements(comp, gather_dim, index.astype(ms.int32)).squeeze(gather_dim))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        shape = as_shape(batch_shape)
        comp = self._component_distribution.expand(shape + (self._num_component,))
        return MixtureSameFamily(self._mixture_distribution.expand(shape), comp)


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform(Normal(loc, scale)): a distribution on the simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        base: Distribution = Normal(loc, scale)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform())

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale


class LogitRelaxedBernoulli(_Binary):
    """The logit of a RelaxedBernoulli sample."""

    support = constraints.real
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        self.temperature = temperature
        self._set_binary(probs, logits)
        super().__init__(tuple(self.probs.shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(ops.broadcast_to(self.probs, shape))
        u = clamp_probs(uniform(shape, probs))
        return (ops.log(u) - ops.log1p(-u) + ops.log(probs) - ops.log1p(-probs)) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return ops.log(as_temperature(self.temperature, diff)) + diff - 2 * ops.log1p(ops.exp(diff))


class RelaxedBernoulli(TransformedDistribution):
    """Sigmoid of a LogitRelaxedBernoulli: a reparameterisable relaxation of Bernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform())

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample (Gumbel-softmax in log space)."""

    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:])

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(uniform(shape, self.logits))
        scores = (self.logits - ops.log(-ops.log(u))) / self.temperature
        return scores - ops.logsumexp(scores, -1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        temperature = as_temperature(self.temperature, logits)
        log_scale = math.lgamma(k) - ops.log(temperature) * (-(k - 1))
        score = logits - value * temperature
        score = (score - ops.logsumexp(score, -1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """exp of an ExpRelaxedCategorical: the Gumbel-softmax (Concrete) relaxation of OneHotCategorical."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits), ExpTransform())

    @property
    def temperature(self) -> Any:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs


def as_temperature(temperature: Any, like: Tensor) -> Tensor:
    """The temperature as a Tensor of ``like``'s dtype (torch accepts a tensor or a number)."""
    if isinstance(temperature, Tensor):
        return temperature.astype(like.dtype)
    return ops.full((), float(temperature), dtype=like.dtype)
