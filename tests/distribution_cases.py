"""One parameterisation of each distribution, built the same way in autograd-async and PyTorch
(float64 parameters), for the tests in tests/distributions."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import autograd_async as aa

P3 = [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]
_rng = np.random.default_rng(3)
_M = _rng.standard_normal((2, 3, 3))
COV = (_M @ _M.transpose(0, 2, 1) + np.eye(3)).tolist()
TRIL = np.linalg.cholesky(np.asarray(COV)).tolist()
FACTOR = _rng.standard_normal((2, 3, 2)).tolist()


class Case(NamedTuple):
    """A distribution's name, tensor parameters (nested lists), and other arguments."""

    name: str
    params: dict
    extra: dict = {}

    @property
    def id(self) -> str:
        return self.name + "(" + ",".join(self.params) + ")"


CASES = [
    Case("Normal", {"loc": [0.3, -1.0], "scale": [0.5, 2.0]}),
    Case("LogNormal", {"loc": [0.3, -1.0], "scale": [0.5, 0.3]}),
    Case("HalfNormal", {"scale": [0.5, 2.0]}),
    Case("Uniform", {"low": [0.3, -1.0], "high": [0.5, 2.0]}),
    Case("Laplace", {"loc": [0.3, -1.0], "scale": [0.5, 2.0]}),
    Case("Cauchy", {"loc": [0.3, -1.0], "scale": [0.5, 2.0]}),
    Case("HalfCauchy", {"scale": [0.5, 2.0]}),
    Case("StudentT", {"df": [3.0, 9.0], "loc": [0.3, -1.0], "scale": [0.5, 2.0]}),
    Case("Gumbel", {"loc": [0.3, -1.0], "scale": [0.5, 2.0]}),
    Case("Exponential", {"rate": [0.5, 2.0]}),
    Case("Gamma", {"concentration": [0.7, 3.0], "rate": [0.5, 2.0]}),
    Case("Chi2", {"df": [1.5, 5.0]}),
    Case("Beta", {"concentration1": [0.7, 3.0], "concentration0": [1.5, 2.0]}),
    Case("Dirichlet", {"concentration": [[0.7, 3.0, 1.2], [2.0, 2.0, 0.5]]}),
    Case("Weibull", {"scale": [0.5, 2.0], "concentration": [1.5, 3.0]}),
    Case("Pareto", {"scale": [0.5, 2.0], "alpha": [3.0, 5.0]}),
    Case("Kumaraswamy", {"concentration1": [0.7, 3.0], "concentration0": [1.5, 2.0]}),
    Case("InverseGamma", {"concentration": [2.5, 3.0], "rate": [0.5, 2.0]}),
    Case("FisherSnedecor", {"df1": [3.0, 7.0], "df2": [5.0, 9.0]}),
    Case("VonMises", {"loc": [0.3, -1.0], "concentration": [0.5, 4.0]}),
    Case("ContinuousBernoulli", {"probs": [0.2, 0.7]}),
    Case("ContinuousBernoulli", {"logits": [0.3, -1.2]}),
    Case("Bernoulli", {"probs": [0.2, 0.7]}),
    Case("Bernoulli", {"logits": [0.3, -1.2]}),
    Case("Binomial", {"probs": [0.2, 0.7]}, {"total_count": 5}),
    Case("Geometric", {"probs": [0.2, 0.7]}),
    Case("NegativeBinomial", {"probs": [0.2, 0.7]}, {"total_count": 3.0}),
    Case("Poisson", {"rate": [0.5, 4.0]}),
    Case("Categorical", {"probs": P3}),
    Case("Categorical", {"logits": P3}),
    Case("OneHotCategorical", {"probs": P3}),
    Case("Multinomial", {"probs": P3}, {"total_count": 4}),
    Case("RelaxedBernoulli", {"probs": [0.2, 0.7]}, {"temperature": 0.5}),
    Case("RelaxedOneHotCategorical", {"logits": P3}, {"temperature": 0.7}),
    Case("LogisticNormal", {"loc": [0.3, -1.0], "scale": [0.5, 2.0]}),
    Case(
        "MultivariateNormal", {"loc": [[0.3, -1.0, 0.2], [0.0, 1.0, 2.0]], "covariance_matrix": COV}
    ),
    Case(
        "MultivariateNormal", {"loc": [[0.3, -1.0, 0.2], [0.0, 1.0, 2.0]], "precision_matrix": COV}
    ),
    Case("MultivariateNormal", {"loc": [[0.3, -1.0, 0.2], [0.0, 1.0, 2.0]], "scale_tril": TRIL}),
    Case("LKJCholesky", {"concentration": [0.5, 2.0]}, {"dim": 3}),
    Case("Wishart", {"df": [4.0, 5.5], "covariance_matrix": COV}),
    Case("Wishart", {"df": [4.0, 5.5], "scale_tril": TRIL}),
    Case(
        "LowRankMultivariateNormal",
        {
            "loc": [[0.3, -1.0, 0.2], [0.0, 1.0, 2.0]],
            "cov_factor": FACTOR,
            "cov_diag": [[0.5, 1.0, 2.0], [1.0, 0.3, 0.7]],
        },
    ),
]


def build(
    lib: Any, case: Case, requires_grad: bool = False, device: str | None = None, **options: Any
) -> tuple[Any, dict]:
    """(distribution, its tensor parameters) of `case` in `lib` (autograd_async or torch)."""
    if lib is aa:
        params = {
            k: aa.tensor(v, dtype=aa.float64, device=device, requires_grad=requires_grad)
            for k, v in case.params.items()
        }
    else:
        params = {
            k: lib.tensor(v, dtype=lib.float64, requires_grad=requires_grad)
            for k, v in case.params.items()
        }
    extra = dict(case.extra)
    if "temperature" in extra:
        extra["temperature"] = (
            aa.tensor(extra["temperature"], dtype=aa.float64, device=device)
            if lib is aa
            else lib.tensor(extra["temperature"], dtype=lib.float64)
        )
    return getattr(lib.distributions, case.name)(**params, **extra, **options), params


def numpy_of(t: Any) -> np.ndarray:
    """The values of an autograd-async or torch tensor as a NumPy array."""
    if isinstance(t, aa.Tensor):
        return np.asarray(t.detach().cpu())
    return t.detach().numpy()
