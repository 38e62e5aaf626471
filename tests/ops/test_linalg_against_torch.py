"""torch.linalg and the old top-level names against PyTorch: values, gradients (float64, and
gradcheck), batched inputs, singular inputs and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import linalg as LA

RNG = np.random.default_rng(5)
SQUARE = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
TALL = RNG.standard_normal((2, 4, 3))
WIDE = RNG.standard_normal((2, 3, 4))
SPD = SQUARE @ SQUARE.transpose(0, 2, 1) + np.eye(3)
RHS = RNG.standard_normal((2, 3, 2))


def _sym(x):
    return (x + x.transpose(-2, -1)) / 2


CASES = {
    "inv": (lambda L, a: L.linalg.inv(a), SQUARE),
    "inverse": (lambda L, a: L.inverse(a), SQUARE),
    "det": (lambda L, a: L.linalg.det(a), SQUARE),
    "det_method": (lambda L, a: a.det(), SQUARE),
    "slogdet": (lambda L, a: L.linalg.slogdet(a).logabsdet, SQUARE),
    "logdet": (lambda L, a: L.logdet(a), SPD),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), SQUARE, RHS),
    "solve_vector": (lambda L, a, b: L.linalg.solve(a, b[..., 0]), SQUARE, RHS),
    "solve_right": (
        lambda L, a, b: L.linalg.solve(a, b.transpose(-2, -1), left=False),
        SQUARE,
        RHS,
    ),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), SQUARE, RHS),
    "solve_triangular_unit": (
        lambda L, a, b: L.linalg.solve_triangular(
            a, b.transpose(-2, -1), upper=False, left=False, unitriangular=True
        ),
        SQUARE,
        RHS,
    ),
    "cholesky": (lambda L, a: L.linalg.cholesky(_sym(a)), SPD),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_sym(a), upper=True), SPD),
    "cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(_sym(a)).L, SPD),
    "cholesky_solve": (lambda L, a, b: L.cholesky_solve(b, L.linalg.cholesky(_sym(a))), SPD, RHS),
    "cholesky_inverse": (lambda L, a: L.cholesky_inverse(L.linalg.cholesky(_sym(a))), SPD),
    "qr_tall": (lambda L, a: L.linalg.qr(a), TALL),
    "qr_wide": (lambda L, a: L.linalg.qr(a), WIDE),
    "eigh": (lambda L, a: L.linalg.eigh(_sym(a)).eigenvalues, SQUARE),
    "eigh_vectors": (lambda L, a: L.linalg.eigh(_sym(a)).eigenvectors.abs(), SQUARE),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(_sym(a)), SQUARE),
    "svd_values": (lambda L, a: L.linalg.svd(a, full_matrices=False).S, TALL),
    "svd_reconstruct": (
        lambda L, a: (lambda r: r.U * r.S.unsqueeze(-2) @ r.Vh)(
            L.linalg.svd(a, full_matrices=False)
        ),
        WIDE,
    ),
    "svd_abs_u": (lambda L, a: L.linalg.svd(a, full_matrices=False).U.abs(), TALL),
    "old_svd_v": (lambda L, a: L.svd(a).V.abs(), TALL),
    "pinv": (lambda L, a: L.linalg.pinv(a), TALL),
    "pinverse": (lambda L, a: L.pinverse(a), WIDE),
    "lstsq": (
        lambda L, a, b: L.linalg.lstsq(a, b).solution,
        TALL,
        np.concatenate([RHS, RHS[:, :1]], 1),
    ),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a * 0.3), SQUARE),
    "matrix_power": (lambda L, a: L.linalg.matrix_power(a, 3), SQUARE),
    "matrix_power_negative": (lambda L, a: L.linalg.matrix_power(a, -2), SQUARE),
    "cond": (lambda L, a: L.linalg.cond(a), SQUARE),
    "cond_one": (lambda L, a: L.linalg.cond(a.detach(), 1), SQUARE),
    "multi_dot": (lambda L, a, b: L.linalg.multi_dot([a[0], a[1], b[0]]), SQUARE, RHS),
    "cross": (lambda L, a, b: L.linalg.cross(a, b[..., :1].expand(2, 3, 3)), SQUARE, RHS),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, a * 2, dim=-2), SQUARE, RHS),
    "vander": (lambda L, a: L.linalg.vander(a[0, 0], N=4), SQUARE),
    "lu_l": (lambda L, a: L.linalg.lu(a).L, SQUARE),
    "lu_u": (lambda L, a: L.linalg.lu(a).U, SQUARE),
    "lu_solve": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b), SQUARE, RHS),
    "tensorinv": (lambda L, a: L.linalg.tensorinv((a[0] @ a[1]).reshape(3, 3), ind=1), SQUARE),
    "householder_product": (lambda L, a: L.linalg.householder_product(a[0], a[1, 0, :2]), TALL),
    "eigvals_abs": (lambda L, a: L.linalg.eigvals(a).abs(), SQUARE),
    "eig_vectors_abs": (lambda L, a: L.linalg.eig(a).eigenvectors.abs(), SPD),
    "svd_full": (lambda L, a: L.linalg.svd(a).S, WIDE),
    "qr_complete": (lambda L, a: L.linalg.qr(a, mode="complete").R, WIDE),
    "old_cross": (lambda L, a, b: L.cross(a, b[..., :1].expand(2, 3, 3)), SQUARE, RHS),
    "cross_method": (lambda L, a, b: a.cross(b[..., :1].expand(2, 3, 3), dim=-1), SQUARE, RHS),
    "tensorsolve": (
        lambda L, a, b: L.linalg.tensorsolve(a[0].reshape(3, 3, 1) * 1, b[0, :, 0]),
        SQUARE,
        RHS,
    ),
    "diagonal": (lambda L, a: L.linalg.diagonal(a, offset=1), SQUARE),
}


def _run(lib, fn, arrays, grad):
    tensors = [lib.tensor(a, dtype=lib.float64, requires_grad=grad) for a in arrays]
    out = fn(lib, *tensors)
    return tensors, out


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_values_and_gradients_like_torch(torch, name):
    fn, *arrays = CASES[name]
    ours_in, ours = _run(aa, fn, arrays, True)
    their_in, theirs = _run(torch, fn, arrays, True)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-8)
    if not theirs[0].requires_grad:
        return
    weights = [RNG.standard_normal(tuple(t.shape)) for t in theirs]
    sum((a * aa.tensor(w)).sum() for a, w in zip(ours, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(theirs, weights)).backward()
    for a, t in zip(ours_in, their_in):
        if t.grad is None:
            continue
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "name",
    [
        "inv",
        "det",
        "slogdet",
        "cholesky",
        "qr_tall",
        "qr_wide",
        "eigh",
        "svd_reconstruct",
        "matrix_exp",
        "lu_l",
        "pinv",
    ],
)
def test_linalg_gradcheck(name):
    fn, *arrays = CASES[name]
    tensors = [aa.tensor(a[0], dtype=aa.float64, requires_grad=True) for a in arrays]

    def f(*xs):
        out = fn(aa, *xs)
        return out if not isinstance(out, tuple) else out[0]

    assert aa.autograd.gradcheck(f, tuple(tensors))


def test_complex_eigenvalues_like_torch(torch):
    a = np.array([[0.0, -1.0], [1.0, 0.0]])
    ours = LA.eigvals(aa.tensor(a))
    theirs = torch.linalg.eigvals(torch.tensor(a))
    assert ours.dtype == aa.complex64 or ours.dtype == aa.complex128
    np.testing.assert_allclose(np.sort_complex(ours.numpy()), np.sort_complex(theirs.numpy()))


def test_singular_inputs_like_torch(torch):
    singular = [[1.0, 2.0], [2.0, 4.0]]
    not_definite = [[1.0, 2.0], [2.0, 1.0]]
    for call in (
        lambda L: L.linalg.inv(L.tensor(singular)),
        lambda L: L.linalg.inv(L.stack([L.tensor(not_definite), L.tensor(singular)])),
        lambda L: L.linalg.solve(L.tensor(singular), L.ones(2)),
        lambda L: L.linalg.cholesky(L.tensor(not_definite)),
        lambda L: L.linalg.cholesky(L.stack([L.tensor(not_definite)] * 2)),
        lambda L: L.linalg.inv(L.ones(2, 3)),
        lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64)),
    ):
        with pytest.raises(RuntimeError) as ours:
            call(aa)
        with pytest.raises(RuntimeError) as theirs:
            call(torch)
        assert str(ours.value) == str(theirs.value)
        assert isinstance(ours.value, LA.LinAlgError) == isinstance(
            theirs.value, torch.linalg.LinAlgError
        )
    for lib in (aa, torch):
        leaf = lib.tensor(TALL, requires_grad=True)
        with pytest.raises(RuntimeError, match="not computed when mode='r'"):
            lib.linalg.qr(leaf, mode="r").R.sum().backward()
    assert LA.det(aa.tensor(singular)).item() == 0
    assert LA.slogdet(aa.tensor(singular)).logabsdet.item() == -np.inf
    assert np.isnan(aa.logdet(-aa.eye(3, dtype=aa.float64)).item())
    assert LA.inv_ex(aa.tensor(singular)).info.item() == 2
    assert LA.cholesky_ex(aa.tensor(not_definite)).info.item() == 2
    assert LA.matrix_rank(aa.tensor(singular)).item() == 1
    lu, pivots = LA.lu_factor(aa.tensor(SQUARE[0]))
    their_lu, their_pivots = torch.linalg.lu_factor(torch.tensor(SQUARE[0]))
    np.testing.assert_allclose(lu.numpy(), their_lu.numpy(), rtol=1e-10)
    assert pivots.tolist() == their_pivots.tolist()


@pytest.mark.parametrize(
    "name",
    [
        "inv",
        "det",
        "solve",
        "cholesky",
        "qr_tall",
        "eigh",
        "svd_reconstruct",
        "matrix_exp",
        "lu_u",
        "pinv",
        "eigvals_abs",
    ],
)
def test_linalg_on_each_device(device, name):
    fn, *arrays = CASES[name]
    tensors = [aa.tensor(a, dtype=aa.float64, device=device, requires_grad=True) for a in arrays]
    out = fn(aa, *tensors)
    out = out[0] if isinstance(out, tuple) else out
    assert out.device == aa.device(device)
    out.sum().backward()
    reference = [aa.tensor(a, dtype=aa.float64, requires_grad=True) for a in arrays]
    expected = fn(aa, *reference)
    (expected[0] if isinstance(expected, tuple) else expected).sum().backward()
    for t, r in zip(tensors, reference):
        assert t.grad.device == aa.device(device)
        np.testing.assert_allclose(t.grad.cpu().numpy(), r.grad.numpy(), rtol=1e-10)
