"""kl_divergence(p, q) and register_kl, with torch's closed forms for same-family pairs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mindspore import Tensor, ops

from ._util import EULER_GAMMA, broadcast_shape, sum_rightmost
from .continuous import Cauchy, Exponential, Gumbel, HalfNormal, Laplace, LogNormal, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import Distribution, Independent
from .gamma_family import Beta, Dirichlet, Gamma
from .multivariate import MultivariateNormal

__all__ = ["kl_divergence", "register_kl"]

_KL: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator: ``@register_kl(P, Q) def kl(p, q): ...`` (dispatch on the most specific pair)."""

    def decorator(fn: Callable) -> Callable:
        _KL[(type_p, type_q)] = fn
        return fn

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) over the batch; NotImplementedError for a pair with no registered closed form."""
    matches = [(tp, tq) for tp, tq in _KL if isinstance(p, tp) and isinstance(q, tq)]
    if not matches:
        raise NotImplementedError(f"No KL(p || q) is implemented for p = {type(p).__name__}, q = {type(q).__name__}")
    best = min(matches, key=lambda pair: (type(p).__mro__.index(pair[0]), type(q).__mro__.index(pair[1])))
    return _KL[best](p, q)


def _inf_where(mask: Tensor, value: Tensor) -> Tensor:
    return ops.where(mask, ops.full_like(value, math.inf), value)


@register_kl(Normal, Normal)
def _normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - ops.log(var_ratio))


@register_kl(LogNormal, LogNormal)
@register_kl(HalfNormal, HalfNormal)
def _through_base(p: Any, q: Any) -> Tensor:
    return _normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (ops.softplus(-q.logits) - ops.softplus(-p.logits))
    t1 = ops.where(p.probs == 0, ops.zeros_like(t1), _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (ops.softplus(q.logits) - ops.softplus(p.logits))
    t2 = ops.where(p.probs == 1, ops.zeros_like(t2), _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _inf_where(ops.broadcast_to(q.probs == 0, t.shape), t)
    t = ops.where(ops.broadcast_to(p.probs == 0, t.shape), ops.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _categorical_categorical(p._categorical, q._categorical)


@register_kl(Beta, Beta)
def _beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_p, sum_q = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
    t1 = ops.lgamma(q.concentration1) + ops.lgamma(q.concentration0) + ops.lgamma(sum_p)
    t2 = ops.lgamma(p.concentration1) + ops.lgamma(p.concentration0) + ops.lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * ops.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * ops.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * ops.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Gamma, Gamma)
def _gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * ops.log(p.rate / q.rate)
    t2 = ops.lgamma(q.concentration) - ops.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ops.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p, sum_q = p.concentration.sum(-1), q.concentration.sum(-1)
    t1 = ops.lgamma(sum_p) - ops.lgamma(sum_q)
    t2 = (ops.lgamma(p.concentration) - ops.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = ops.digamma(p.concentration) - ops.digamma(sum_p).expand_dims(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return -ops.log(ratio) + ratio - 1


@register_kl(Laplace, Laplace)
def _laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = ops.abs(p.loc - q.loc)
    return -ops.log(scale_ratio) + loc_abs_diff / q.scale + scale_ratio * ops.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Uniform, Uniform)
def _uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ops.log((q.high - q.low) / (p.high - p.low))
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Cauchy, Cauchy)
def _cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    return ops.log(((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2) / (4 * p.scale * q.scale))


@register_kl(Gumbel, Gumbel)
def _gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ops.log(ct1) - ct2 + ct3
    t3 = ops.exp(ct2 + ops.lgamma(1 + ct1) - ct3)
    return t1 + ct1 * EULER_GAMMA + t3 - (1 + EULER_GAMMA)


@register_kl(Poisson, Poisson)
def _poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (ops.log(p.rate) - ops.log(q.rate)) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - ops.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + ops.log1p(-p.probs) - ops.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(MultivariateNormal, MultivariateNormal)
def _mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes cannot be computed"
        )
    n = p.event_shape[0]
    batch = broadcast_shape(p.batch_shape, q.batch_shape)
    q_inv = ops.inverse(ops.broadcast_to(q._unbroadcasted_scale_tril, batch + (n, n)))
    p_tril = ops.broadcast_to(p._unbroadcasted_scale_tril, batch + (n, n))
    term2 = (ops.matmul(q_inv, p_tril) ** 2).sum((-2, -1))
    term3 = (ops.matmul(q_inv, (q.loc - p.loc).expand_dims(-1)).squeeze(-1) ** 2).sum(-1)
    return q._half_log_det() - p._half_log_det() + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted_batch_ndims")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
