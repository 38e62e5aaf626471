"""Distributions on every device: samples drawn on the parameters' device follow
`aa.manual_seed`, stay in the support, have the right moments, and score on that device."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_cases import CASES, build, numpy_of

import autograd_async as aa

N = 20_000


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_samples_follow_the_seed_on_the_device(device, case):
    dist, _ = build(aa, case, device=device)
    aa.manual_seed(11)
    first = dist.sample((3,))
    aa.manual_seed(11)
    again = dist.sample((3,))
    aa.manual_seed(12)
    other = dist.sample((3,))
    assert first.device == aa.device(device)
    np.testing.assert_array_equal(numpy_of(first), numpy_of(again))
    if case.name not in (
        "Bernoulli",
        "Categorical",
        "OneHotCategorical",
        "Binomial",
        "Geometric",
        "Poisson",
        "NegativeBinomial",
        "Multinomial",
    ):
        assert not np.array_equal(numpy_of(first), numpy_of(other))
    assert bool(dist.support.check(first).all())
    log_prob = dist.log_prob(first)
    assert log_prob.device == aa.device(device)
    assert np.isfinite(numpy_of(log_prob)).all()
    if dist.has_rsample:
        aa.manual_seed(11)
        np.testing.assert_array_equal(numpy_of(dist.rsample((3,))), numpy_of(first))


MOMENTS = [
    c
    for c in CASES
    if c.name
    not in {
        "Cauchy",
        "HalfCauchy",
        "RelaxedBernoulli",
        "RelaxedOneHotCategorical",
        "LogisticNormal",
        "Categorical",
        "StudentT",
        "Pareto",
        "FisherSnedecor",
        "InverseGamma",
        "VonMises",
        "LogNormal",
        "LKJCholesky",
    }
]


@pytest.mark.parametrize("case", MOMENTS, ids=lambda c: c.id)
def test_sample_moments(case):
    """The sample mean lies within 6 standard errors of the mean (it cannot flake)."""
    dist, _ = build(aa, case)
    aa.manual_seed(5)
    samples = numpy_of(dist.sample((N,)))
    mean, variance = numpy_of(dist.mean), numpy_of(dist.variance)
    error = np.abs(samples.mean(0) - mean)
    assert (error <= 6 * np.sqrt(variance / N) + 1e-12).all(), (samples.mean(0), mean)


def test_von_mises_samples_have_the_circular_mean():
    dist = aa.distributions.VonMises(aa.tensor([0.5, -2.0]), aa.tensor([4.0, 1.0]))
    aa.manual_seed(2)
    angles = numpy_of(dist.sample((N,)))
    assert ((angles >= -np.pi) & (angles < np.pi)).all()
    circular_mean = np.arctan2(np.sin(angles).mean(0), np.cos(angles).mean(0))
    np.testing.assert_allclose(circular_mean, [0.5, -2.0], atol=0.05)
    resultant = np.hypot(np.sin(angles).mean(0), np.cos(angles).mean(0))
    np.testing.assert_allclose(1 - resultant, numpy_of(dist.variance), atol=0.02)


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in CASES
        if c.name
        in {
            "Gamma",
            "Dirichlet",
            "MultivariateNormal",
            "LowRankMultivariateNormal",
            "VonMises",
            "Wishart",
            "StudentT",
            "Binomial",
        }
    ],
    ids=lambda c: c.id,
)
def test_gradients_on_the_device_match_the_cpu(device, case):
    """rsample (when there is one) and log_prob differentiated on the device, like the cpu."""
    grads = {}
    for where in ("cpu", device):
        dist, params = build(aa, case, requires_grad=True, device=where)
        aa.manual_seed(4)
        value = dist.sample((2,))
        total = dist.log_prob(value).sum()
        if dist.has_rsample:
            total = total + dist.rsample((3,)).sum()
        total.backward()
        grads[where] = {k: numpy_of(p.grad) for k, p in params.items()}
        assert all(p.grad.device == aa.device(where) for p in params.values())
    for name in grads["cpu"]:
        np.testing.assert_allclose(
            grads[device][name], grads["cpu"][name], rtol=1e-10, err_msg=name
        )
