"""kl_divergence against PyTorch for every registered pair (values and gradients), the registry
(same pairs as PyTorch, most specific match, ambiguity warning, user rules) and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_cases import COV, FACTOR, TRIL, numpy_of

import autograd_async as aa
from autograd_async.distributions import kl as kl_module

P3 = [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]
Q3 = [[0.4, 0.4, 0.2], [0.3, 0.3, 0.4]]
LOC3 = [[0.3, -1.0, 0.2], [0.0, 1.0, 2.0]]

# Two parameter sets per class (p takes the first, q the second): tensors, then other arguments.
PARAMS = {
    "Bernoulli": ({"probs": [0.2, 0.7]}, {"probs": [0.4, 0.5]}),
    "Poisson": ({"rate": [0.5, 3.0]}, {"rate": [1.5, 2.0]}),
    "Beta": (
        {"concentration1": [1.5, 3.0], "concentration0": [2.0, 0.7]},
        {"concentration1": [0.8, 2.0], "concentration0": [1.2, 3.0]},
    ),
    "ContinuousBernoulli": ({"probs": [0.2, 0.7]}, {"probs": [0.6, 0.3]}),
    "Exponential": ({"rate": [0.5, 2.0]}, {"rate": [1.5, 0.7]}),
    "Gamma": (
        {"concentration": [2.0, 0.7], "rate": [1.5, 3.0]},
        {"concentration": [1.2, 3.0], "rate": [0.5, 2.0]},
    ),
    "Normal": (
        {"loc": [0.3, -1.0], "scale": [0.5, 2.0]},
        {"loc": [-0.2, 0.5], "scale": [1.5, 0.7]},
    ),
    "Pareto": (
        {"scale": [0.3, 0.4], "alpha": [3.0, 5.0]},
        {"scale": [0.1, 0.2], "alpha": [2.5, 4.0]},
    ),
    "Uniform": ({"low": [0.2, 0.3], "high": [0.5, 0.9]}, {"low": [0.1, 0.2], "high": [0.8, 0.95]}),
    "Binomial": ({"probs": [0.2, 0.7], "total_count": 5}, {"probs": [0.4, 0.5], "total_count": 5}),
    "Categorical": ({"probs": P3}, {"probs": Q3}),
    "OneHotCategorical": ({"probs": P3}, {"probs": Q3}),
    "Cauchy": (
        {"loc": [0.3, -1.0], "scale": [0.5, 2.0]},
        {"loc": [-0.2, 0.5], "scale": [1.5, 0.7]},
    ),
    "Dirichlet": (
        {"concentration": [[0.7, 3.0, 1.2], [2.0, 2.0, 0.5]]},
        {"concentration": [[1.7, 1.0, 2.2], [1.0, 3.0, 1.5]]},
    ),
    "Geometric": ({"probs": [0.2, 0.7]}, {"probs": [0.4, 0.5]}),
    "Gumbel": (
        {"loc": [0.3, -1.0], "scale": [0.5, 2.0]},
        {"loc": [-0.2, 0.5], "scale": [1.5, 0.7]},
    ),
    "HalfNormal": ({"scale": [0.5, 2.0]}, {"scale": [1.5, 0.7]}),
    "Laplace": (
        {"loc": [0.3, -1.0], "scale": [0.5, 2.0]},
        {"loc": [-0.2, 0.5], "scale": [1.5, 0.7]},
    ),
    "MultivariateNormal": (
        {"loc": LOC3, "covariance_matrix": COV},
        {"loc": [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]], "scale_tril": TRIL},
    ),
    "LowRankMultivariateNormal": (
        {"loc": LOC3, "cov_factor": FACTOR, "cov_diag": [[0.5, 1.0, 2.0], [1.0, 0.3, 0.7]]},
        {
            "loc": [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]],
            "cov_factor": (np.asarray(FACTOR) / 2).tolist(),
            "cov_diag": [[1.5, 1.0, 0.5], [0.4, 0.8, 1.7]],
        },
    ),
}


def _make(lib, name, which, requires_grad=False):
    """(distribution, tensor parameters) of class `name` with parameter set `which`."""
    f = lambda v: lib.tensor(v, dtype=lib.float64, requires_grad=requires_grad)
    D = lib.distributions
    if name == "Independent":
        loc = f([[0.3, -1.0, 0.2], [0.0, 1.0, 2.0]] if which == 0 else LOC3[::-1])
        scale = f([[0.5, 2.0, 1.0], [1.0, 1.0, 0.4]] if which == 0 else [[1.0] * 3, [2.0] * 3])
        return D.Independent(D.Normal(loc, scale), 1), {"loc": loc, "scale": scale}
    if name == "TransformedDistribution":
        dist, params = _make(lib, "Normal", which, requires_grad)
        return D.TransformedDistribution(dist, [D.ExpTransform()]), params
    spec = dict(PARAMS[name][which])
    others = {k: spec.pop(k) for k in ("total_count",) if k in spec}
    params = {k: f(v) for k, v in spec.items()}
    return getattr(D, name)(**params, **others), params


def _registered_pairs():
    return sorted(
        (p.__name__, q.__name__)
        for p, q in kl_module._KL_REGISTRY
        if p.__name__ != "ExponentialFamily"
    )


def test_the_registry_holds_torchs_pairs(torch):
    theirs = {(p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY}
    ours = {(p.__name__, q.__name__) for p, q in kl_module._KL_REGISTRY}
    assert ours == theirs


@pytest.mark.parametrize("pair", _registered_pairs(), ids="-".join)
def test_kl_matches_torch(torch, pair):
    p_name, q_name = pair
    p, p_params = _make(aa, p_name, 0, requires_grad=True)
    q, q_params = _make(aa, q_name, 1, requires_grad=True)
    p_t, p_params_t = _make(torch, p_name, 0, requires_grad=True)
    q_t, q_params_t = _make(torch, q_name, 1, requires_grad=True)
    ours = aa.distributions.kl_divergence(p, q)
    theirs = torch.distributions.kl_divergence(p_t, q_t)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(numpy_of(ours), numpy_of(theirs), rtol=1e-6, atol=1e-9)
    finite = np.isfinite(numpy_of(theirs))
    if not finite.any() or not theirs.requires_grad:
        return
    weights = np.where(finite, np.linspace(0.5, 1.5, finite.size).reshape(finite.shape), 0.0)
    (aa.where(aa.tensor(finite), ours, 0.0) * aa.tensor(weights)).sum().backward()
    (torch.where(torch.tensor(finite), theirs, 0.0) * torch.tensor(weights)).sum().backward()
    for ours_params, theirs_params in ((p_params, p_params_t), (q_params, q_params_t)):
        for name in ours_params:
            g, g_t = ours_params[name].grad, theirs_params[name].grad
            if g_t is None:
                continue
            np.testing.assert_allclose(
                numpy_of(g), numpy_of(g_t), rtol=1e-5, atol=1e-8, err_msg=name
            )


def test_exponential_family_bregman_rule_matches_the_closed_form():
    from autograd_async.distributions.kl_pairs import _kl_expfamily_expfamily  # noqa: PLC0415

    p, _ = _make(aa, "Gamma", 0)
    q, _ = _make(aa, "Gamma", 1)
    np.testing.assert_allclose(
        numpy_of(_kl_expfamily_expfamily(p, q)),
        numpy_of(aa.distributions.kl_divergence(p, q)),
        rtol=1e-9,
    )
    with pytest.raises(NotImplementedError, match="different exponential families"):
        _kl_expfamily_expfamily(p, _make(aa, "Normal", 0)[0])


def test_missing_pair_raises_torchs_error(torch):
    D = aa.distributions
    with pytest.raises(NotImplementedError) as ours:
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError) as theirs:
        torch.distributions.kl_divergence(
            torch.distributions.Cauchy(0.0, 1.0), torch.distributions.Normal(0.0, 1.0)
        )
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value) == ("No KL(p || q) is implemented for p type Cauchy and q type Normal")


def test_register_kl_prefers_the_most_specific_rule_and_refuses_non_types():
    D = aa.distributions

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return aa.tensor(42.0)

    try:
        assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 42.0
        assert D.kl_divergence(D.Normal(0.0, 1.0), MyNormal(1.0, 1.0)).item() == 0.5
    finally:
        del kl_module._KL_REGISTRY[MyNormal, D.Normal]
        kl_module._KL_MEMOIZE.clear()
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_ambiguous_rules_warn():
    D = aa.distributions

    class A(D.Normal):
        pass

    class B(D.Normal):
        pass

    D.register_kl(A, D.Normal)(lambda p, q: aa.tensor(1.0))
    D.register_kl(D.Normal, B)(lambda p, q: aa.tensor(2.0))
    try:
        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
            D.kl_divergence(A(0.0, 1.0), B(0.0, 1.0))
    finally:
        del kl_module._KL_REGISTRY[A, D.Normal]
        del kl_module._KL_REGISTRY[D.Normal, B]
        kl_module._KL_MEMOIZE.clear()


def test_binomial_with_larger_q_count_is_not_implemented():
    D = aa.distributions
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        D.kl_divergence(
            D.Binomial(3, probs=aa.tensor([0.5])), D.Binomial(5, probs=aa.tensor([0.5]))
        )


@pytest.mark.parametrize("p_name", ["Beta", "ContinuousBernoulli"])
def test_kl_to_a_uniform_covering_the_unit_interval_is_finite(torch, p_name):
    p, _ = _make(aa, p_name, 0)
    p_t, _ = _make(torch, p_name, 0)
    wide = [[-0.5, 0.0], [1.5, 1.0]]
    q = aa.distributions.Uniform(
        aa.tensor(wide[0], dtype=aa.float64), aa.tensor(wide[1], dtype=aa.float64)
    )
    q_t = torch.distributions.Uniform(
        torch.tensor(wide[0], dtype=torch.float64), torch.tensor(wide[1], dtype=torch.float64)
    )
    ours = aa.distributions.kl_divergence(p, q)
    theirs = torch.distributions.kl_divergence(p_t, q_t)
    np.testing.assert_allclose(numpy_of(ours), numpy_of(theirs), rtol=1e-6)
    assert np.isfinite(numpy_of(ours)).any()
