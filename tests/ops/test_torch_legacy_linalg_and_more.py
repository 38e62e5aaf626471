"""triangular_solve, lu, lu_solve, lu_unpack, vander, pdist, bilinear, fill, igamma, detach,
unravel_index and the older autocast switches, against PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(29)
SQUARE = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
RHS = RNG.standard_normal((3, 2))
ROWS = RNG.standard_normal((5, 3))
X1 = RNG.standard_normal((2, 3))
X2 = RNG.standard_normal((2, 4))
WEIGHT = RNG.standard_normal((5, 3, 4))
BIAS = RNG.standard_normal(5)
POSITIVE = RNG.uniform(0.5, 3.0, (2, 3))


def _quiet(fn):
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)

    return run


CASES = {
    "triangular_solve": (lambda L, T, b, a: L.triangular_solve(b, a), RHS, SQUARE),
    "triangular_solve_lower_transpose": (
        lambda L, T, b, a: b.triangular_solve(a, upper=False, transpose=True),
        RHS,
        SQUARE,
    ),
    "triangular_solve_unit": (
        lambda L, T, b, a: L.triangular_solve(b, a, True, False, True),
        RHS,
        SQUARE,
    ),
    "lu_solve": (lambda L, T, b, a: L.lu_solve(b, *L.linalg.lu_factor(a)), RHS, SQUARE),
    "lu_unpack": (lambda L, T, a: L.lu_unpack(*L.linalg.lu_factor(a))[1:], SQUARE),
    "lu_unpack_wide": (lambda L, T, a: L.lu_unpack(*L.linalg.lu_factor(a))[1:], RHS.T.copy()),
    "pdist": (lambda L, T, r: L.pdist(r), ROWS),
    "pdist_p": (lambda L, T, r: L.pdist(r, 1.5), ROWS),
    "bilinear": (lambda L, T, a, b, w, c: L.bilinear(a, b, w, c), X1, X2, WEIGHT, BIAS),
    "bilinear_no_bias": (lambda L, T, a, b, w: L.bilinear(a, b, w), X1, X2, WEIGHT),
    "fill": (lambda L, T, x: L.fill(x, 2.5) * x, X1),
    "fill_tensor": (lambda L, T, x, v: L.fill(x, v[0, 0]), X1, X2),
    "igamma": (lambda L, T, a, x: L.igamma(a, x), POSITIVE, POSITIVE.T.copy().T),
    "igammac_method": (lambda L, T, a, x: a.igammac(x), POSITIVE, POSITIVE[::-1].copy()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_torch(torch, device, name):
    fn, *arrays = CASES[name]
    # igamma's gradient in its first argument is not implemented in PyTorch (nor here); the lu
    # factorization's backward takes square matrices only (docs/differences-from-pytorch.md).
    grads = not name.startswith("ig") and name != "lu_unpack_wide"
    check_like_torch(torch, device, _quiet(fn), *arrays, check_grads=grads)


def test_lu_unpack_permutation_like_torch(torch):
    ours = aa.lu_unpack(*aa.linalg.lu_factor(aa.tensor(SQUARE)))
    theirs = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(SQUARE)))
    np.testing.assert_array_equal(ours.P.numpy(), theirs.P.numpy())
    np.testing.assert_allclose((ours.P @ ours.L @ ours.U).numpy(), SQUARE, rtol=1e-12)


@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("count", [None, 0, 1, 5])
def test_vander_like_torch(torch, device, increasing, count):
    """Values as PyTorch's; the gradient by finite differences (PyTorch's vander fails its own
    backward with a version error)."""
    ours = aa.vander(aa.tensor(ROWS[:, 0], device=device), count, increasing)
    theirs = torch.vander(torch.tensor(ROWS[:, 0]), count, increasing)
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-12)
    assert aa.vander(aa.tensor([1, 2]), 3).dtype == aa.int64
    x = aa.tensor(ROWS[0], device=device, requires_grad=True)
    assert aa.autograd.gradcheck(lambda t: aa.vander(t, 4, increasing), (x,))


def test_lu_like_torch(torch):
    for lib in (aa, torch):
        with pytest.warns(UserWarning, match="torch.lu is deprecated"):
            factors, pivots, infos = lib.lu(lib.tensor(SQUARE), get_infos=True)
        assert pivots.dtype == lib.int32 and infos.dtype == lib.int32 and infos.item() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = aa.lu(aa.tensor(SQUARE))
        theirs = torch.lu(torch.tensor(SQUARE))
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-12)
    assert ours[1].tolist() == theirs[1].tolist()


def test_unravel_index_like_torch(torch):
    for indices, shape in (([4, 7, -1, -7, 6], (2, 4)), ([5], 6), ([0, 11], (3, 2, 2))):
        ours = aa.unravel_index(aa.tensor(indices), shape)
        theirs = torch.unravel_index(torch.tensor(indices), shape)
        assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]
    for lib in (aa, torch):
        with pytest.raises(TypeError, match="expected 'indices' to be integer dtype"):
            lib.unravel_index(lib.tensor([1.0]), (2, 3))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda L: L.vander(L.ones(2, 2)), "x must be a one-dimensional tensor"),
        (lambda L: L.vander(L.ones(2), -1), "N must be non-negative"),
        (lambda L: L.pdist(L.ones(2, 2, 2)), "pdist only supports 2D tensors, got: 3D"),
        (
            lambda L: L.bilinear(L.ones(2, 3), L.ones(2, 4), L.ones(5, 3, 3)),
            "input2 size does not match weight size: got 4 but expected 3",
        ),
    ],
)
def test_errors_like_torch(torch, call, message):
    for lib in (aa, torch):
        with pytest.raises(RuntimeError, match=message):
            call(lib)


def test_detach_and_is_inference_functions():
    x = aa.ones(2, requires_grad=True)
    assert not aa.detach(x).requires_grad and not aa.is_inference(x)
    with aa.inference_mode():
        assert aa.is_inference(aa.ones(2))


def test_older_autocast_switches_like_torch(torch):
    for lib in (aa, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not lib.is_autocast_cpu_enabled()
            assert lib.get_autocast_cpu_dtype() == lib.bfloat16
            assert lib.get_autocast_gpu_dtype() == lib.float16
            lib.set_autocast_cpu_enabled(True)
            try:
                assert lib.is_autocast_enabled("cpu") and lib.is_autocast_cpu_enabled()
            finally:
                lib.set_autocast_enabled("cpu", False)
            assert not lib.is_autocast_enabled("cpu")
    with pytest.warns(DeprecationWarning, match="get_autocast_dtype\\('cpu'\\)"):
        aa.get_autocast_cpu_dtype()
