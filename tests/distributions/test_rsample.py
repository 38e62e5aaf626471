"""Reparameterised samples: exact gradients through the base noise for location-scale families
and Cholesky factors, Gamma's implicit gradient against finite differences of the inverse CDF
(and PyTorch's `_standard_gamma_grad`), and for every family with a finite mean, the gradient
of the sample mean against the gradient of the distribution's mean (statistically)."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_cases import CASES, build, numpy_of

import autograd_async as aa
from autograd_async.ops.distribution_math import _standard_gamma, _standard_gamma_grad

D = aa.distributions


def _leaf(values):
    return aa.tensor(values, dtype=aa.float64, requires_grad=True)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Cauchy", "Gumbel"])
def test_location_scale_rsample_gradient_is_the_noise(name):
    loc, scale = _leaf([0.3, -1.0]), _leaf([0.5, 2.0])
    aa.manual_seed(1)
    x = getattr(D, name)(loc, scale).rsample((5,))
    x.sum().backward()
    noise = (numpy_of(x) - numpy_of(loc)) / numpy_of(scale)
    np.testing.assert_allclose(numpy_of(loc.grad), [5.0, 5.0], rtol=1e-12)
    np.testing.assert_allclose(numpy_of(scale.grad), noise.sum(0), rtol=1e-9, atol=1e-12)


def test_uniform_rsample_gradient():
    low, high = _leaf([0.0, -1.0]), _leaf([1.0, 3.0])
    x = D.Uniform(low, high).rsample((6,))
    x.sum().backward()
    u = (numpy_of(x) - numpy_of(low)) / (numpy_of(high) - numpy_of(low))
    np.testing.assert_allclose(numpy_of(low.grad), (1 - u).sum(0), rtol=1e-9)
    np.testing.assert_allclose(numpy_of(high.grad), u.sum(0), rtol=1e-9)


def test_multivariate_normal_rsample_gradient_through_the_factor():
    loc = _leaf([0.3, -1.0, 2.0])
    tril = _leaf([[1.0, 0.0, 0.0], [0.5, 2.0, 0.0], [-0.3, 0.2, 0.7]])
    x = D.MultivariateNormal(loc, scale_tril=tril).rsample((4,))
    x.sum().backward()
    noise = np.linalg.solve(numpy_of(tril), (numpy_of(x) - numpy_of(loc)).T).T
    # x = loc + L @ noise uses the whole matrix, as in PyTorch: every entry has a gradient.
    expected = np.ones((3, 1)) * noise.sum(0)[None, :]
    np.testing.assert_allclose(numpy_of(tril.grad), expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(numpy_of(loc.grad), [4.0, 4.0, 4.0])


def test_standard_gamma_gradient_is_the_implicit_one(torch):
    scipy_special = pytest.importorskip("scipy.special")
    alpha = _leaf([0.05, 0.4, 1.0, 3.0, 30.0])
    aa.manual_seed(3)
    x = _standard_gamma(alpha)
    x.sum().backward()
    a, v = numpy_of(alpha), numpy_of(x)
    u = scipy_special.gammainc(a, v)
    step = 1e-6 * a
    by_differences = (
        scipy_special.gammaincinv(a + step, u) - scipy_special.gammaincinv(a - step, u)
    ) / (2 * step)
    np.testing.assert_allclose(numpy_of(alpha.grad), by_differences, rtol=1e-5)
    reference = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(v)).numpy()
    np.testing.assert_allclose(numpy_of(alpha.grad), reference, rtol=2e-3)
    np.testing.assert_allclose(
        numpy_of(_standard_gamma_grad(aa.tensor(a), aa.tensor(v))), numpy_of(alpha.grad)
    )


FINITE_MEAN = [
    c
    for c in CASES
    if c.name
    in {
        "Normal",
        "LogNormal",
        "HalfNormal",
        "Uniform",
        "Laplace",
        "Gumbel",
        "StudentT",
        "Exponential",
        "Gamma",
        "Chi2",
        "Beta",
        "Dirichlet",
        "Weibull",
        "Pareto",
        "Kumaraswamy",
        "InverseGamma",
        "MultivariateNormal",
        "LowRankMultivariateNormal",
        "ContinuousBernoulli",
    }
]


@pytest.mark.parametrize("case", FINITE_MEAN, ids=lambda c: c.id)
def test_rsample_mean_gradient_matches_the_mean_gradient(case):
    """d/dtheta of the mean of many rsamples estimates d/dtheta of E[x] (= d mean / d theta)."""
    dist, params = build(aa, case, requires_grad=True)
    aa.manual_seed(0)
    samples = dist.rsample((4000,))
    weights = aa.tensor(
        np.linspace(0.5, 1.5, int(np.prod(samples.shape[1:]))).reshape(samples.shape[1:]),
        dtype=aa.float64,
    )
    estimate = aa.autograd.grad(
        (samples.mean(0) * weights).sum(),
        list(params.values()),
        allow_unused=True,
        retain_graph=True,
    )
    exact = aa.autograd.grad((dist.mean * weights).sum(), list(params.values()), allow_unused=True)
    for name, e, g in zip(params, estimate, exact):
        if g is None:
            continue
        scale = np.abs(numpy_of(g)).max() + 0.1
        np.testing.assert_allclose(numpy_of(e), numpy_of(g), atol=0.12 * scale, err_msg=name)


def test_relaxed_and_straight_through_rsample_are_differentiable(torch):
    logits = _leaf([[0.2, -0.5, 1.0]])
    x = D.RelaxedOneHotCategorical(aa.tensor(0.5, dtype=aa.float64), logits=logits).rsample()
    assert np.allclose(numpy_of(x.sum(-1)), 1.0)
    (x * aa.tensor([1.0, 2.0, 3.0], dtype=aa.float64)).sum().backward()
    assert logits.grad is not None and np.abs(numpy_of(logits.grad)).sum() > 0
    probs = _leaf([[0.2, 0.3, 0.5]])
    y = D.OneHotCategoricalStraightThrough(probs=probs).rsample((3,))
    (y * aa.tensor([1.0, 2.0, 3.0], dtype=aa.float64)).sum().backward()
    probs_t = torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64, requires_grad=True)
    y_t = torch.distributions.OneHotCategoricalStraightThrough(probs=probs_t).rsample((3,))
    (y_t * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(numpy_of(probs.grad), numpy_of(probs_t.grad), rtol=1e-12)


def test_sample_is_outside_the_graph_and_rsample_inside():
    loc = _leaf([0.0])
    dist = D.Normal(loc, 1.0)
    assert not dist.sample().requires_grad
    assert dist.rsample().requires_grad
    with pytest.raises(NotImplementedError):
        D.Bernoulli(probs=aa.tensor([0.3])).rsample()
