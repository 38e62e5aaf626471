"""Transforms against PyTorch's (forward, inverse, log |det J|, shapes, signs), log |det J| of the
elementwise ones against autograd's derivative, caching, and the biject_to / transform_to
registries on every constraint they cover."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_cases import numpy_of

import autograd_async as aa

X = [[0.3, -1.2, 0.5], [2.0, 0.1, -0.4]]
POSITIVE = [[0.3, 1.2, 0.5], [2.0, 0.1, 0.4]]
MATRIX = [[[0.3, -1.2, 0.5], [2.0, 0.1, -0.4], [0.7, 0.2, -0.9]]]

TRANSFORMS = {
    "Exp": (lambda T: T.ExpTransform(), X),
    "Sigmoid": (lambda T: T.SigmoidTransform(), X),
    "Tanh": (lambda T: T.TanhTransform(), X),
    "Softplus": (lambda T: T.SoftplusTransform(), X),
    "Power": (lambda T: T.PowerTransform(2.5), POSITIVE),
    "Affine": (lambda T: T.AffineTransform(0.5, -2.0), X),
    "Affine(event_dim=1)": (lambda T: T.AffineTransform(0.5, 3.0, event_dim=1), X),
    "Abs": (lambda T: T.AbsTransform(), X),
    "Softmax": (lambda T: T.SoftmaxTransform(), X),
    "StickBreaking": (lambda T: T.StickBreakingTransform(), X),
    "LowerCholesky": (lambda T: T.LowerCholeskyTransform(), MATRIX),
    "PositiveDefinite": (lambda T: T.PositiveDefiniteTransform(), MATRIX),
    "CorrCholesky": (lambda T: T.CorrCholeskyTransform(), X),
    "Compose": (lambda T: T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()]), X),
    "Independent": (lambda T: T.IndependentTransform(T.ExpTransform(), 1), X),
    "Reshape": (lambda T: T.ReshapeTransform((3,), (3, 1)), X),
    "Inverse": (lambda T: T.ExpTransform().inv, POSITIVE),
    "Cat": (
        lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(0.0, 2.0)], 1, [1, 2]),
        X,
    ),
    "Stack": (lambda T: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], 0), X),
}
BIJECTIVE = {
    "Exp",
    "Sigmoid",
    "Tanh",
    "Softplus",
    "Power",
    "Affine",
    "Affine(event_dim=1)",
    "StickBreaking",
    "CorrCholesky",
    "Compose",
    "Independent",
    "Reshape",
    "Inverse",
    "Cat",
    "Stack",
}
NO_JACOBIAN = {"Abs", "Softmax", "LowerCholesky", "PositiveDefinite"}


def _tensor(lib, values):
    return lib.tensor(values, dtype=lib.float64)


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transform_matches_torch(torch, name):
    make, values = TRANSFORMS[name]
    ours, theirs = make(aa.distributions.transforms), make(torch.distributions.transforms)
    x, x_t = _tensor(aa, values), _tensor(torch, values)
    y, y_t = ours(x), theirs(x_t)
    np.testing.assert_allclose(numpy_of(y), numpy_of(y_t), rtol=1e-9, atol=1e-12)
    assert ours.bijective == theirs.bijective
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert ours.forward_shape(x.shape) == tuple(theirs.forward_shape(x_t.shape))
    assert ours.inverse_shape(y.shape) == tuple(theirs.inverse_shape(y_t.shape))
    fresh = make(aa.distributions.transforms)  # no cache: a real inverse
    np.testing.assert_allclose(
        numpy_of(fresh.inv(_tensor(aa, numpy_of(y_t).tolist()))),
        numpy_of(theirs.inv(y_t.clone())),
        rtol=1e-7,
        atol=1e-9,
    )
    if name not in NO_JACOBIAN:
        np.testing.assert_allclose(
            numpy_of(ours.log_abs_det_jacobian(x, y)),
            numpy_of(theirs.log_abs_det_jacobian(x_t, y_t)),
            rtol=1e-7,
            atol=1e-9,
        )
    if name in BIJECTIVE and name not in ("Cat", "Stack", "CorrCholesky", "StickBreaking"):
        assert bool(ours.codomain.check(y).all())


@pytest.mark.parametrize("name", ["Exp", "Sigmoid", "Tanh", "Softplus", "Power", "Affine"])
def test_elementwise_log_det_is_the_log_derivative(name):
    make, values = TRANSFORMS[name]
    transform = make(aa.distributions.transforms)
    x = _tensor(aa, values).requires_grad_()
    y = transform(x)
    (slope,) = aa.autograd.grad(y.sum(), [x])
    np.testing.assert_allclose(
        numpy_of(transform.log_abs_det_jacobian(x, y)), np.log(np.abs(numpy_of(slope))), rtol=1e-9
    )


def test_cache_returns_the_input_of_a_sample_and_inverse_is_an_involution():
    T = aa.distributions.transforms
    transform = T.SigmoidTransform(cache_size=1)
    x = aa.tensor([40.0])  # sigmoid(40) rounds to 1: only the cache gives x back
    assert transform.inv(transform(x)) is x
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.TanhTransform()
    assert T.AffineTransform(1.0, 2.0).sign == 1 and T.AffineTransform(1.0, -2.0).sign == -1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    assert repr(T.ComposeTransform([T.ExpTransform(), T.TanhTransform()])) == (
        "ComposeTransform(\n    ExpTransform(),\n    TanhTransform()\n)"
    )


def test_transformed_distribution_matches_torch(torch):
    def make(lib):
        D = lib.distributions
        base = D.Normal(
            lib.tensor([0.3, -1.0], dtype=lib.float64), lib.tensor([0.5, 2.0], dtype=lib.float64)
        )
        return D.TransformedDistribution(base, [D.AffineTransform(1.0, -2.0), D.SigmoidTransform()])

    ours, theirs = make(aa), make(torch)
    values = [[0.2, 0.7], [0.9, 0.05]]
    np.testing.assert_allclose(
        numpy_of(ours.log_prob(_tensor(aa, values))),
        numpy_of(theirs.log_prob(_tensor(torch, values))),
        rtol=1e-9,
    )
    np.testing.assert_allclose(
        numpy_of(ours.cdf(_tensor(aa, values))),
        numpy_of(theirs.cdf(_tensor(torch, values))),
        rtol=1e-9,
    )
    np.testing.assert_allclose(
        numpy_of(ours.icdf(_tensor(aa, values))),
        numpy_of(theirs.icdf(_tensor(torch, values))),
        rtol=1e-9,
    )
    sample = ours.rsample((4,))
    assert sample.shape == (4, 2) and sample.requires_grad is False
    assert repr(ours.support) == repr(theirs.support)
    stick = aa.distributions.TransformedDistribution(
        aa.distributions.Normal(aa.zeros(3), aa.ones(3)), aa.distributions.StickBreakingTransform()
    )
    assert stick.event_shape == (4,) and stick.batch_shape == ()


CONSTRAINTS = {
    "real": lambda C: C.real,
    "positive": lambda C: C.positive,
    "nonnegative": lambda C: C.nonnegative,
    "greater_than": lambda C: C.greater_than(1.5),
    "greater_than_eq": lambda C: C.greater_than_eq(-2.0),
    "less_than": lambda C: C.less_than(3.0),
    "unit_interval": lambda C: C.unit_interval,
    "interval": lambda C: C.interval(-1.0, 4.0),
    "half_open_interval": lambda C: C.half_open_interval(0.0, 2.0),
    "simplex": lambda C: C.simplex,
    "real_vector": lambda C: C.real_vector,
    "independent": lambda C: C.independent(C.positive, 1),
    "lower_cholesky": lambda C: C.lower_cholesky,
    "positive_definite": lambda C: C.positive_definite,
    "corr_cholesky": lambda C: C.corr_cholesky,
    "cat": lambda C: C.cat([C.positive, C.real], 1, [1, 2]),
    "stack": lambda C: C.stack([C.positive, C.unit_interval], 0),
}


@pytest.mark.parametrize("name", CONSTRAINTS)
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registries_match_torch(torch, name, registry):
    ours_reg = getattr(aa.distributions, registry)
    theirs_reg = getattr(torch.distributions, registry)
    constraint = CONSTRAINTS[name](aa.distributions.constraints)
    constraint_t = CONSTRAINTS[name](torch.distributions.constraints)
    try:
        theirs = theirs_reg(constraint_t)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours_reg(constraint)
        return
    ours = ours_reg(constraint)
    values = MATRIX if name in ("lower_cholesky", "positive_definite") else X
    x, x_t = _tensor(aa, values), _tensor(torch, values)
    y, y_t = ours(x), theirs(x_t)
    np.testing.assert_allclose(numpy_of(y), numpy_of(y_t), rtol=1e-9, atol=1e-12)
    assert bool(constraint.check(y).all())


def test_constraints_check_like_torch(torch):
    pairs = [
        (lambda C: C.simplex, [[0.2, 0.8], [0.5, 0.6]]),
        (lambda C: C.boolean, [0.0, 1.0, 0.5]),
        (lambda C: C.integer_interval(0, 3), [0.0, 3.0, 4.0, 1.5]),
        (lambda C: C.nonnegative_integer, [0.0, -1.0, 2.0, 2.5]),
        (lambda C: C.one_hot, [[0.0, 1.0], [1.0, 1.0]]),
        (lambda C: C.lower_triangular, [[[1.0, 0.0], [2.0, 1.0]], [[1.0, 1.0], [0.0, 1.0]]]),
        (lambda C: C.positive_semidefinite, [[[1.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [2.0, 1.0]]]),
        (lambda C: C.symmetric, [[[1.0, 2.0], [2.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]]),
        (lambda C: C.multinomial(3), [[1.0, 2.0], [2.0, 2.0]]),
    ]
    for make, values in pairs:
        ours = make(aa.distributions.constraints)
        theirs = make(torch.distributions.constraints)
        np.testing.assert_array_equal(
            numpy_of(ours.check(_tensor(aa, values))),
            numpy_of(theirs.check(_tensor(torch, values))),
        )
        assert ours.is_discrete == theirs.is_discrete
        assert ours.event_dim == theirs.event_dim
        assert repr(ours) == repr(theirs)
    C = aa.distributions.constraints
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(aa.zeros(1))
