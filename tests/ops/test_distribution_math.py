"""The ops distributions are built on: lgamma, digamma, polygamma, mvlgamma, log Bessel I0/I1,
binomial and Gamma draws, linalg.cholesky and linalg.solve_triangular (values and gradients
against SciPy/NumPy and PyTorch, and by finite differences, on every device)."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op, to_numpy
from seeding import assert_follows_the_seed

import autograd_async as aa
from autograd_async.autograd import gradcheck
from autograd_async.ops.distribution_math import _standard_gamma, log_bessel_i

special = pytest.importorskip("scipy.special")

X = [[0.3, 1.7, 4.5], [2.2, 0.9, 11.0]]


def test_lgamma_digamma_polygamma_values_and_gradients(device):
    check_op(aa.lgamma, special.gammaln, X, device=device)
    check_op(aa.digamma, special.psi, X, device=device)
    for n in (1, 2):
        check_op(
            lambda x, n=n: aa.polygamma(n, x),
            lambda a, n=n: special.polygamma(n, a),
            X,
            device=device,
        )
    check_op(
        lambda x: aa.mvlgamma(x + 2, 3),
        lambda a: (
            special.multigammaln(a + 2, 3)
            if np.ndim(a) == 0
            else np.vectorize(lambda v: special.multigammaln(v, 3))(a + 2)
        ),
        X,
        device=device,
    )


def test_second_derivatives_by_finite_differences():
    x = aa.tensor(X, dtype=aa.float64, requires_grad=True)
    assert aa.autograd.gradgradcheck(aa.lgamma, (x,))
    assert aa.autograd.gradgradcheck(aa.digamma, (x,))


def test_special_functions_match_torch(torch):
    values = np.array(X)
    for name in ("lgamma", "digamma"):
        ours = getattr(aa, name)(aa.tensor(values, requires_grad=True))
        theirs = getattr(torch, name)(torch.tensor(values, requires_grad=True))
        np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        to_numpy(aa.tensor(values).polygamma(2)),
        torch.tensor(values).polygamma(2).numpy(),
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        to_numpy(aa.tensor(values).lgamma()), torch.tensor(values).lgamma().numpy(), rtol=1e-12
    )
    assert aa.lgamma(aa.tensor([1.0, 2.0])).dtype == aa.float32
    with pytest.raises(TypeError, match=r"lgamma\(\): argument 'input'"):
        aa.lgamma([1.0])
    with pytest.raises(RuntimeError, match="negative n"):
        aa.polygamma(-1, aa.tensor([1.0]))


def test_log_bessel_matches_scipy_with_gradients():
    x = aa.tensor([0.01, 0.5, 3.0, 40.0, 700.0], dtype=aa.float64, requires_grad=True)
    expected = [
        np.log(special.i0e(to_numpy(x))) + to_numpy(x),
        np.log(special.i1e(to_numpy(x))) + to_numpy(x),
    ]
    for order in (0, 1):
        np.testing.assert_allclose(to_numpy(log_bessel_i(x, order)), expected[order], rtol=1e-12)
        assert gradcheck(lambda t, o=order: log_bessel_i(t, o), (x,))


def test_standard_gamma_and_binomial_follow_the_seed(device):
    assert_follows_the_seed(
        lambda d, g: _standard_gamma(aa.full((200,), 2.5, dtype=aa.float64, device=d), g), device
    )
    assert_follows_the_seed(
        lambda d, g: aa.binomial(
            aa.full((200,), 10.0, device=d), aa.full((200,), 0.3, device=d), generator=g
        ),
        device,
    )


def test_binomial_and_gamma_draw_the_right_distributions():
    aa.manual_seed(0)
    counts = to_numpy(aa.binomial(aa.full((50_000,), 20.0), aa.full((50_000,), 0.25)))
    assert counts.min() >= 0 and counts.max() <= 20 and (counts == np.round(counts)).all()
    assert abs(counts.mean() - 5.0) < 6 * np.sqrt(20 * 0.25 * 0.75 / 50_000)
    draws = to_numpy(_standard_gamma(aa.full((50_000,), 0.7, dtype=aa.float64)))
    assert abs(draws.mean() - 0.7) < 6 * np.sqrt(0.7 / 50_000)
    assert abs(draws.var() - 0.7) < 0.05


def _spd(rng, batch, n):
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def test_cholesky_matches_torch_with_gradients(torch, device):
    rng = np.random.default_rng(0)
    a = _spd(rng, (2,), 3)
    ours = aa.tensor(a, device=device, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    weights = rng.standard_normal((2, 3, 3))
    lower = aa.linalg.cholesky(ours)
    (lower * aa.tensor(weights, device=device)).sum().backward()
    (torch.linalg.cholesky(theirs) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(to_numpy(lower), np.linalg.cholesky(a), rtol=1e-12)
    np.testing.assert_allclose(to_numpy(ours.grad), theirs.grad.numpy(), rtol=1e-9, atol=1e-12)
    upper = aa.linalg.cholesky(aa.tensor(a, device=device), upper=True)
    np.testing.assert_allclose(to_numpy(upper), np.swapaxes(np.linalg.cholesky(a), -1, -2))
    x = aa.tensor(a, device=device, requires_grad=True)
    assert gradcheck(lambda t: aa.linalg.cholesky((t + t.mT) / 2), (x,))
    assert aa.autograd.gradgradcheck(lambda t: aa.linalg.cholesky((t + t.mT) / 2), (x,))


def test_cholesky_errors_match_torch(torch):
    not_pd = [[1.0, 2.0], [2.0, 1.0]]
    with pytest.raises(RuntimeError) as ours:
        aa.linalg.cholesky(aa.tensor(not_pd))
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.cholesky(torch.tensor(not_pd))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError) as ours:
        aa.linalg.cholesky(aa.tensor([[[1.0, 0.0], [0.0, 1.0]], not_pd]))
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.cholesky(torch.tensor([[[1.0, 0.0], [0.0, 1.0]], not_pd]))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="batches of square matrices"):
        aa.linalg.cholesky(aa.ones(2, 3))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
def test_solve_triangular_matches_torch_with_gradients(torch, device, upper, left):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 3)) + 4 * np.eye(3)  # the other triangle is ignored
    b = rng.standard_normal((4, 1, 3, 2) if left else (4, 1, 2, 3))  # batch dims broadcast
    ours = [aa.tensor(v, device=device, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    x = aa.linalg.solve_triangular(*ours, upper=upper, left=left)
    x_t = torch.linalg.solve_triangular(*theirs, upper=upper, left=left)
    np.testing.assert_allclose(to_numpy(x), x_t.detach().numpy(), rtol=1e-10)
    weights = rng.standard_normal(x_t.shape)
    (x * aa.tensor(weights, device=device)).sum().backward()
    (x_t * torch.tensor(weights)).sum().backward()
    for t, t_t in zip(ours, theirs):
        assert t.grad.shape == tuple(t_t.shape)
        np.testing.assert_allclose(to_numpy(t.grad), t_t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert gradcheck(
        lambda p, q: aa.linalg.solve_triangular(p, q, upper=upper, left=left), tuple(ours)
    )


def test_solve_triangular_unitriangular(torch):
    a = np.array([[2.0, 0.0], [3.0, 5.0]])
    b = np.array([[1.0], [2.0]])
    ours = aa.linalg.solve_triangular(aa.tensor(a), aa.tensor(b), upper=False, unitriangular=True)
    theirs = torch.linalg.solve_triangular(
        torch.tensor(a), torch.tensor(b), upper=False, unitriangular=True
    )
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy())
