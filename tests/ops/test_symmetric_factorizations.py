"""linalg.ldl_factor(_ex), ldl_solve and lu_factor_ex against PyTorch: LAPACK's compact factors
and pivots, info codes, solutions, PyTorch's refusal to differentiate LDL, and lu_factor_ex's
gradient through LU."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.autograd import gradcheck
from tests.gradients import to_numpy

_RNG = np.random.default_rng(0)


def _symmetric(dtype, hermitian, batch=(3,), n=5):
    a = _RNG.normal(size=batch + (n, n))
    if dtype.startswith("complex"):
        a = a + 1j * _RNG.normal(size=a.shape)
    a = a.astype(dtype)
    other = a.swapaxes(-1, -2)
    return a + (other.conj() if hermitian else other)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_factor_and_solve_match_torch(torch, device, dtype, hermitian):
    a = _symmetric(dtype, hermitian)
    b = _RNG.normal(size=(5, 2)).astype(dtype)
    ours = aa.linalg.ldl_factor_ex(aa.tensor(a, device=device), hermitian=hermitian)
    theirs = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine.device == aa.device(device)
        assert str(mine.dtype) == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_allclose(to_numpy(mine), ref.numpy(), rtol=tol, atol=tol)
    LD, pivots = aa.linalg.ldl_factor(aa.tensor(a, device=device), hermitian=hermitian)
    x = aa.linalg.ldl_solve(LD, pivots, aa.tensor(b, device=device), hermitian=hermitian)
    ref = torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b), hermitian=hermitian)
    assert tuple(x.shape) == (3, 5, 2)
    np.testing.assert_allclose(to_numpy(x), ref.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(
        a @ to_numpy(x), np.broadcast_to(b, (3, 5, 2)), rtol=tol, atol=tol * 10
    )


def test_two_by_two_pivots_and_singular_matrices_match_torch(torch):
    s = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])
    ours, theirs = aa.linalg.ldl_factor(aa.tensor(s)), torch.linalg.ldl_factor(torch.tensor(s))
    np.testing.assert_array_equal(ours.pivots.numpy(), [-3, -3, 3])
    np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy())
    zero = aa.linalg.ldl_factor_ex(aa.zeros(3, 3))
    assert zero.info.item() == torch.linalg.ldl_factor_ex(torch.zeros(3, 3)).info.item() == 1
    for A in (np.zeros((3, 3)), _RNG.normal(size=(2, 4, 3)), np.array([[1.0, 2], [2, 4]])):
        mine, ref = aa.linalg.lu_factor_ex(aa.tensor(A)), torch.linalg.lu_factor_ex(torch.tensor(A))
        for x, y in zip(mine, ref, strict=True):
            assert str(x.dtype) == str(y.dtype).removeprefix("torch.")
            np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match=r"U\[1,1\] is zero"):
        aa.linalg.lu_factor_ex(aa.zeros(3, 3), check_errors=True)


def test_ldl_has_no_derivative_as_in_torch(torch):
    a = _symmetric("float64", False, batch=())
    A = aa.tensor(a, requires_grad=True)
    LD, pivots = aa.linalg.ldl_factor(A)
    assert LD.grad_fn.name() == "NotImplemented" and not pivots.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not"):
        LD.sum().backward()
    B = aa.ones(5, 1, dtype=aa.float64, requires_grad=True)
    x = aa.linalg.ldl_solve(LD.detach(), pivots, B)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not"):
        x.sum().backward()
    ref = torch.linalg.ldl_solve(
        *torch.linalg.ldl_factor(torch.tensor(a)),
        torch.ones(5, 1, dtype=torch.float64, requires_grad=True),
    )
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not"):
        ref.sum().backward()


def test_lu_factor_ex_is_differentiable(device):
    A = aa.tensor(_RNG.normal(size=(4, 4)), device=device, requires_grad=True)
    assert gradcheck(lambda a: aa.linalg.lu_factor_ex(a).LU, (A,))


def test_errors_match_torch(torch):
    for lib in (aa, torch):
        with pytest.raises(
            RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"
        ):
            lib.linalg.ldl_factor(lib.ones(2, 3))
