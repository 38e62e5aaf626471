"""`autograd_async.distributions`: PyTorch's `torch.distributions` on this package's tensors."""

from . import constraints, transforms
from .distribution import Distribution, ExponentialFamily
from .normal import Cauchy, Laplace, Normal, StudentT, Uniform
from .transforms import *  # noqa: F403 - the transforms, as in PyTorch's namespace
from .gamma import Beta, Chi2, Dirichlet, Exponential, FisherSnedecor, Gamma
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
from .combinators import Independent, MixtureSameFamily, TransformedDistribution
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
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .bounded import ContinuousBernoulli, VonMises
