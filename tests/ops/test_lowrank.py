"""svd_lowrank, pca_lowrank and lobpcg: low-rank matrices rebuilt exactly, singular values and
extreme eigenvalues as PyTorch's exact routines give them, gradients through the randomised SVD
(its random draw fixed by the seed), and PyTorch's argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck

_RNG = np.random.default_rng(0)
LOW_RANK = _RNG.normal(size=(20, 4)) @ _RNG.normal(size=(4, 15))


@pytest.mark.parametrize("transposed", [False, True])
def test_svd_lowrank_rebuilds_a_low_rank_matrix(torch, device, transposed):
    a = LOW_RANK.T if transposed else LOW_RANK
    U, S, V = aa.svd_lowrank(aa.tensor(a, device=device), q=6)
    assert U.device == aa.device(device)
    assert (tuple(U.shape), tuple(S.shape), tuple(V.shape)) == (
        (a.shape[0], 6),
        (6,),
        (a.shape[1], 6),
    )
    rebuilt = ((U * S) @ V.T).cpu().numpy()
    np.testing.assert_allclose(rebuilt, a, atol=1e-10)
    exact = torch.linalg.svdvals(torch.tensor(a)).numpy()[:4]
    np.testing.assert_allclose(S.cpu().numpy()[:4], exact, rtol=1e-10)


def test_pca_lowrank_centres_the_columns(torch, device):
    U, S, V = aa.pca_lowrank(aa.tensor(LOW_RANK, device=device))
    assert tuple(S.shape) == (6,)
    centred = LOW_RANK - LOW_RANK.mean(0, keepdims=True)
    exact = torch.linalg.svdvals(torch.tensor(centred)).numpy()
    np.testing.assert_allclose(S.cpu().numpy()[:4], exact[:4], rtol=1e-10)
    _, S_raw, _ = aa.pca_lowrank(aa.tensor(LOW_RANK, device=device), q=4, center=False)
    np.testing.assert_allclose(
        S_raw.cpu().numpy(), torch.linalg.svdvals(torch.tensor(LOW_RANK)).numpy()[:4], rtol=1e-10
    )
    for lib in (aa, torch):
        with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
            lib.pca_lowrank(lib.tensor(LOW_RANK), q=16)


def test_svd_lowrank_gradients(device):
    a = aa.tensor(_RNG.normal(size=(6, 4)), device=device, requires_grad=True)

    def singular_values(x):
        aa.manual_seed(3)
        return aa.svd_lowrank(x, q=2, niter=1)[1]

    assert gradcheck(singular_values, (a,))


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_finds_the_extreme_eigenpairs(torch, device, largest):
    m = _RNG.normal(size=(30, 30))
    m = m + m.T
    E, X = aa.lobpcg(aa.tensor(m, device=device), k=2, largest=largest)
    values = np.linalg.eigvalsh(m)
    expected = values[::-1][:2] if largest else values[:2]
    np.testing.assert_allclose(E.cpu().numpy(), expected, rtol=1e-6)
    A, Xn = m, X.cpu().numpy()
    np.testing.assert_allclose(A @ Xn, Xn * E.cpu().numpy(), atol=1e-4)
    np.testing.assert_allclose(Xn.T @ Xn, np.eye(2), atol=1e-10)
    ref, _ = torch.lobpcg(torch.tensor(m), k=2, largest=largest)
    np.testing.assert_allclose(E.cpu().numpy(), ref.numpy(), rtol=1e-5)


def test_lobpcg_generalised_problem():
    m = _RNG.normal(size=(24, 24))
    m = m + m.T
    b = np.diag(np.linspace(1.0, 2.0, 24))
    E, X = aa.lobpcg(aa.tensor(m), k=1, B=aa.tensor(b))
    import scipy.linalg  # noqa: PLC0415

    expected = scipy.linalg.eigh(m, b, eigvals_only=True)[-1]
    np.testing.assert_allclose(E.numpy(), [expected], rtol=1e-6)


def test_lobpcg_refuses_too_many_pairs(torch):
    for lib in (aa, torch):
        with pytest.raises(ValueError, match="smaller than 3 x the number of requested"):
            lib.lobpcg(lib.eye(5, dtype=lib.float64), k=2)
