"""Every distribution against PyTorch's on the same float64 parameters: log_prob of PyTorch's
samples and its gradients, entropy, mean, mode, variance, stddev, cdf, icdf, shapes, supports,
enumerate_support and expand; and log_prob gradients by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_cases import CASES, build, numpy_of

import autograd_async as aa
from autograd_async.autograd import gradcheck

# PyTorch 2.13's Wishart.rsample warns on every draw (it tests the support the wrong way round).
pytestmark = pytest.mark.filterwarnings("ignore:Singular sample detected:UserWarning")

PROPERTIES = ("mean", "mode", "variance", "stddev")


def _values(torch, dist_t, case):
    torch.manual_seed(0)
    return dist_t.sample((3,))


def _same_or_both_raise(ours_fn, theirs_fn, rtol=1e-6, atol=1e-8):
    """Both raise NotImplementedError, or both give the same values."""
    try:
        expected = theirs_fn()
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours_fn()
        return
    np.testing.assert_allclose(numpy_of(ours_fn()), numpy_of(expected), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_values_match_torch(torch, case):
    ours, _ = build(aa, case)
    theirs, _ = build(torch, case)
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    assert (
        repr(ours.support).replace("tensor", "") == repr(theirs.support).replace("tensor", "")
        or type(ours.support).__name__ == type(theirs.support).__name__
    )
    value_t = _values(torch, theirs, case)
    value = aa.tensor(value_t.numpy())
    np.testing.assert_allclose(
        numpy_of(ours.log_prob(value)),
        numpy_of(theirs.log_prob(value_t)),
        rtol=1e-6,
        atol=1e-8,
    )
    for name in PROPERTIES:
        _same_or_both_raise(lambda n=name: getattr(ours, n), lambda n=name: getattr(theirs, n))
    _same_or_both_raise(ours.entropy, theirs.entropy)
    _same_or_both_raise(lambda: ours.cdf(value), lambda: theirs.cdf(value_t))
    q = [[0.1, 0.7], [0.4, 0.95]] if not ours.event_shape else None
    if q is not None:
        _same_or_both_raise(
            lambda: ours.icdf(aa.tensor(q, dtype=aa.float64)),
            lambda: theirs.icdf(torch.tensor(q, dtype=torch.float64)),
        )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_samples_have_torch_shapes_and_dtypes(torch, case):
    ours, _ = build(aa, case)
    theirs, _ = build(torch, case)
    for shape in [(), (4,), (2, 3)]:
        ours_sample = ours.sample(shape)
        theirs_sample = theirs.sample(shape)
        assert ours_sample.shape == tuple(theirs_sample.shape)
        assert str(ours_sample.dtype) == str(theirs_sample.dtype).replace("torch.", "")
        assert not ours_sample.requires_grad
        assert bool(ours.support.check(ours_sample).all())
        if ours.has_rsample:
            assert ours.rsample(shape).shape == tuple(theirs_sample.shape)
    assert ours.sample(5).shape == (5,) + ours.batch_shape + ours.event_shape


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_log_prob_gradients_match_torch(torch, case):
    ours, params = build(aa, case, requires_grad=True)
    theirs, params_t = build(torch, case, requires_grad=True)
    value_t = _values(torch, theirs, case)
    value = aa.tensor(value_t.numpy())
    weights = np.linspace(0.5, 1.5, int(np.prod(ours.batch_shape))).reshape(ours.batch_shape)
    (ours.log_prob(value) * aa.tensor(weights)).sum().backward()
    (theirs.log_prob(value_t) * torch.tensor(weights)).sum().backward()
    for name in params:
        ours_grad, theirs_grad = numpy_of(params[name].grad), numpy_of(params_t[name].grad)
        if name == "scale_tril":  # PyTorch's Wishart also differentiates the unread triangle
            ours_grad, theirs_grad = np.tril(ours_grad), np.tril(theirs_grad)
        np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-5, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_log_prob_gradients_by_finite_differences(torch, case):
    _, params = build(aa, case, requires_grad=True)
    theirs, _ = build(torch, case)
    value = aa.tensor(_values(torch, theirs, case).numpy())
    names = list(params)

    def log_prob(*tensors):
        kwargs = dict(zip(names, tensors))
        for name in ("covariance_matrix", "precision_matrix"):  # a symmetric perturbation
            if name in kwargs:
                kwargs[name] = (kwargs[name] + kwargs[name].mT) / 2
        dist = getattr(aa.distributions, case.name)(**kwargs, **_extra(case), validate_args=False)
        return dist.log_prob(value)

    assert gradcheck(log_prob, tuple(params.values()), atol=1e-5, rtol=1e-4)


def _extra(case):
    extra = dict(case.extra)
    if "temperature" in extra:
        extra["temperature"] = aa.tensor(extra["temperature"], dtype=aa.float64)
    return extra


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_expand_matches_torch(torch, case):
    ours, _ = build(aa, case)
    theirs, _ = build(torch, case)
    shape = (4,) + ours.batch_shape
    ours_expanded = ours.expand(shape)
    theirs_expanded = theirs.expand(shape)
    assert type(ours_expanded).__name__ == type(theirs_expanded).__name__
    assert ours_expanded.batch_shape == tuple(theirs_expanded.batch_shape)
    assert ours_expanded.event_shape == tuple(theirs_expanded.event_shape)
    value_t = _values(torch, theirs, case)
    np.testing.assert_allclose(
        numpy_of(ours_expanded.log_prob(aa.tensor(value_t.numpy()).unsqueeze(1))),
        numpy_of(theirs_expanded.log_prob(value_t.unsqueeze(1))),
        rtol=1e-6,
        atol=1e-8,
    )
    assert ours_expanded.sample((2,)).shape == (2,) + shape + ours.event_shape


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c.name in {"Bernoulli", "Binomial", "Categorical", "OneHotCategorical"}],
    ids=lambda c: c.id,
)
def test_enumerate_support_matches_torch(torch, case):
    ours, _ = build(aa, case)
    theirs, _ = build(torch, case)
    for expand in (True, False):
        np.testing.assert_array_equal(
            numpy_of(ours.enumerate_support(expand)), numpy_of(theirs.enumerate_support(expand))
        )
    assert str(ours.enumerate_support().dtype) == str(theirs.enumerate_support().dtype).replace(
        "torch.", ""
    )


def test_perplexity_and_repr(torch):
    ours = aa.distributions.Normal(aa.tensor([0.0, 1.0]), aa.tensor([1.0, 2.0]))
    theirs = torch.distributions.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
    np.testing.assert_allclose(
        numpy_of(ours.perplexity()), numpy_of(theirs.perplexity()), rtol=1e-6
    )
    assert repr(aa.distributions.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    assert repr(aa.distributions.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


def test_mixture_same_family_matches_torch(torch):
    weights = [[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]]
    loc = [[-1.0, 0.0, 2.0], [0.5, 1.0, 1.5]]
    scale = [[0.5, 1.0, 0.3], [1.0, 0.2, 2.0]]

    def make(lib, requires_grad=False):
        f = lambda v: lib.tensor(v, dtype=lib.float64, requires_grad=requires_grad)
        w, m, s = f(weights), f(loc), f(scale)
        mix = lib.distributions.MixtureSameFamily(
            lib.distributions.Categorical(probs=w), lib.distributions.Normal(m, s)
        )
        return mix, (w, m, s)

    ours, params = make(aa, True)
    theirs, params_t = make(torch, True)
    values = [[0.1, 1.2], [-0.5, 0.3], [2.0, 5.0]]
    ours.log_prob(aa.tensor(values, dtype=aa.float64)).sum().backward()
    theirs.log_prob(torch.tensor(values, dtype=torch.float64)).sum().backward()
    for p, pt in zip(params, params_t):
        np.testing.assert_allclose(numpy_of(p.grad), numpy_of(pt.grad), rtol=1e-6)
    for name in ("mean", "variance"):
        np.testing.assert_allclose(
            numpy_of(getattr(ours, name)), numpy_of(getattr(theirs, name)), rtol=1e-6
        )
    np.testing.assert_allclose(
        numpy_of(ours.cdf(aa.tensor([0.3, 1.0], dtype=aa.float64))),
        numpy_of(theirs.cdf(torch.tensor([0.3, 1.0], dtype=torch.float64))),
    )
    assert ours.sample((5,)).shape == (5, 2)
    assert ours.batch_shape == (2,) and ours.event_shape == ()
    assert repr(ours.support) == repr(theirs.support)
    assert bool(ours.support.check(ours.sample((3,))).all())
    mvn_mix = aa.distributions.MixtureSameFamily(
        aa.distributions.Categorical(probs=aa.tensor([0.5, 0.5])),
        aa.distributions.Independent(aa.distributions.Normal(aa.zeros(2, 3), aa.ones(2, 3)), 1),
    )
    assert mvn_mix.sample((4,)).shape == (4, 3)
    assert mvn_mix.log_prob(aa.zeros(4, 3)).shape == (4,)


def test_independent_matches_torch(torch):
    ours = aa.distributions.Independent(aa.distributions.Normal(aa.zeros(2, 3), aa.ones(2, 3)), 1)
    theirs = torch.distributions.Independent(
        torch.distributions.Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1
    )
    assert ours.batch_shape == (2,) and ours.event_shape == (3,)
    value = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(
        numpy_of(ours.log_prob(aa.tensor(value))),
        numpy_of(theirs.log_prob(torch.tensor(value))),
        rtol=1e-6,
    )
    np.testing.assert_allclose(numpy_of(ours.entropy()), numpy_of(theirs.entropy()), rtol=1e-6)
    assert ours.expand((5, 2)).batch_shape == (5, 2)
    assert repr(ours.support) == repr(theirs.support)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        aa.distributions.Independent(aa.distributions.Normal(aa.zeros(2), aa.ones(2)), 2)


def test_generalized_pareto_matches_torch(torch):
    """In float32: PyTorch's own GeneralizedPareto compares float64 parameters with a float32
    zero and fails."""
    values = {"loc": [0.3, -1.0, 0.0], "scale": [0.5, 2.0, 1.0], "concentration": [0.3, -0.2, 0.0]}
    ours_params = {k: aa.tensor(v, requires_grad=True) for k, v in values.items()}
    theirs_params = {k: torch.tensor(v, requires_grad=True) for k, v in values.items()}
    ours = aa.distributions.GeneralizedPareto(**ours_params)
    theirs = torch.distributions.GeneralizedPareto(**theirs_params)
    x = [[0.5, 0.0, 2.0], [1.0, 3.0, 0.1]]
    q = [[0.1, 0.5, 0.9], [0.3, 0.99, 0.01]]
    for name in ("log_prob", "cdf", "icdf", "log_survival_function", "log_cdf"):
        arg = q if name == "icdf" else x
        np.testing.assert_allclose(
            numpy_of(getattr(ours, name)(aa.tensor(arg))),
            numpy_of(getattr(theirs, name)(torch.tensor(arg))),
            rtol=1e-5,
            atol=1e-6,
            err_msg=name,
        )
    for name in ("mean", "variance", "mode"):
        np.testing.assert_allclose(
            numpy_of(getattr(ours, name)), numpy_of(getattr(theirs, name)), rtol=1e-6
        )
    np.testing.assert_allclose(numpy_of(ours.entropy()), numpy_of(theirs.entropy()), rtol=1e-6)
    ours.log_prob(aa.tensor(x)).sum().backward()
    theirs.log_prob(torch.tensor(x)).sum().backward()
    for k in values:
        np.testing.assert_allclose(
            numpy_of(ours_params[k].grad), numpy_of(theirs_params[k].grad), rtol=1e-4, atol=1e-6
        )
    sample = ours.rsample((100,))
    assert sample.shape == (100, 3) and bool(ours.support.check(sample).all())
    assert ours.expand((2, 3)).batch_shape == (2, 3)


def test_lazy_parameters_keep_their_graph_and_sample_n_warns():
    probs = aa.tensor([0.3, 0.6], requires_grad=True)
    dist = aa.distributions.Bernoulli(probs=probs)
    with aa.no_grad():
        logits = dist.logits  # computed with grad enabled, as in PyTorch
    assert logits.requires_grad
    assert dist.logits is logits
    with pytest.warns(FutureWarning, match="sample_n"):
        assert dist.sample_n(3).shape == (3, 2)


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in CASES
        if c.name in {"Normal", "Exponential", "Gamma", "Bernoulli", "ContinuousBernoulli"}
    ],
    ids=lambda c: c.id,
)
def test_exponential_family_entropy_by_bregman_divergence(case):
    dist, _ = build(aa, case)
    np.testing.assert_allclose(
        numpy_of(aa.distributions.ExponentialFamily.entropy(dist)),
        numpy_of(dist.entropy()),
        rtol=1e-7,
        atol=1e-9,
    )
