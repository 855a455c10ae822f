"""torch.distributions on MindSpore: the same classes, properties and methods, computed with
mindspore.ops (converted code keeps ``d.mean``, ``d.rsample()``, ``d.log_prob(v)`` as written).

MindSpore's own ``mindspore.nn.probability.distribution`` has methods where torch has properties
(``d.mean()``), no ``rsample``, and on 2.10 several of its classes lack cdf / entropy / sample
(Laplace, StudentT, HalfNormal: "not implemented"), so converted code uses these instead.
Needs MindSpore only; a converted project carries this package as it is.
"""

from __future__ import annotations

from . import constraints
from ._util import broadcast_all, clamp_probs, logits_to_probs, probs_to_logits
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Gumbel, HalfCauchy, HalfNormal, Laplace, LogNormal, Normal, Uniform
from .discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    Multinomial,
    NegativeBinomial,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    Poisson,
)
from .distribution import Distribution, ExponentialFamily, Independent, TransformedDistribution
from .gamma_family import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, InverseGamma, StudentT
from .kl import kl_divergence, register_kl
from .multivariate import (
    LogisticNormal,
    LowRankMultivariateNormal,
    MixtureSameFamily,
    MultivariateNormal,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .shaped import ContinuousBernoulli, Kumaraswamy, Pareto, VonMises, Weibull
from .transforms import (
    AbsTransform,
    AffineTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
)
from .transforms_compose import CatTransform, ComposeTransform, StackTransform, identity_transform

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "CatTransform",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ComposeTransform",
    "ContinuousBernoulli",
    "CumulativeDistributionTransform",
    "Dirichlet",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "IndependentTransform",
    "InverseGamma",
    "Kumaraswamy",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "LowerCholeskyTransform",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "biject_to",
    "broadcast_all",
    "clamp_probs",
    "constraints",
    "identity_transform",
    "kl_divergence",
    "logits_to_probs",
    "probs_to_logits",
    "register_kl",
    "transform_to",
]
