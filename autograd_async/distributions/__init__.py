"""`autograd_async.distributions`: PyTorch's `torch.distributions` on this package's tensors.

Samples are drawn on the parameters' device from the default generator (`aa.manual_seed`);
`rsample` is differentiable in the parameters (reparameterised, implicitly for the Gamma family).
"""

from . import constraints, transforms
from .bounded import ContinuousBernoulli, VonMises
from .categorical import (
    Categorical,
    Multinomial,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from .combinators import Independent, MixtureSameFamily, TransformedDistribution
from .constraint_registry import biject_to, transform_to
from .count_distributions import Bernoulli, Binomial, Geometric, NegativeBinomial, Poisson
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, Exponential, FisherSnedecor, Gamma
from .generalized_pareto import GeneralizedPareto
from .kl import kl_divergence, register_kl
from .matrix_distributions import LKJCholesky, Wishart
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .normal import Cauchy, Laplace, Normal, StudentT, Uniform
from .relaxed import RelaxedBernoulli, RelaxedOneHotCategorical
from .transformed import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    LogNormal,
    Pareto,
    Weibull,
)
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
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
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)

# isort: split
from . import kl_cross_pairs, kl_pairs  # noqa: F401 - registers the closed-form KL pairs

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
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
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]
