"""Top-level torch functions of the math families (inverse hyperbolics, exponent arithmetic,
products, writes into copies, predicates) against PyTorch on every device: values, dtypes and
float64 gradients (with gradcheck), and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)
W = RNG.standard_normal(3)
UNIT = RNG.uniform(-0.9, 0.9, (3, 4))
ABOVE_ONE = RNG.uniform(1.1, 3.0, (3, 4))
BATCH = RNG.standard_normal((2, 3, 5))
BATCH2 = RNG.standard_normal((2, 5, 4))
SQUARE = RNG.standard_normal((4, 4))

DIFFERENTIABLE = {
    "acosh": (lambda L, T, x: L.acosh(x), ABOVE_ONE),
    "arccosh_method": (lambda L, T, x: x.arccosh(), ABOVE_ONE),
    "atanh": (lambda L, T, x: L.atanh(x), UNIT),
    "arctanh": (lambda L, T, x: L.arctanh(x), UNIT),
    "deg2rad": (lambda L, T, x: L.deg2rad(x), A),
    "rad2deg_method": (lambda L, T, x: x.rad2deg(), A),
    "logaddexp": (lambda L, T, x, y: L.logaddexp(x, y), A, B),
    "logaddexp_broadcast": (lambda L, T, x, v: L.logaddexp(x, v), A, V),
    "logaddexp2": (lambda L, T, x, y: x.logaddexp2(y), A, B),
    "ldexp": (lambda L, T, x: L.ldexp(x, T([1, 2, 0, 3])), A),
    "ldexp_float_exponent": (lambda L, T, x, y: L.ldexp(x, y), A, B),
    "frexp": (lambda L, T, x: L.frexp(x * 10), A),
    "inner": (lambda L, T, x, y: L.inner(x, y), A, B),
    "inner_scalar": (lambda L, T, x, y: L.inner(x[0, 0], y), A, B),
    "vdot": (lambda L, T, v, y: L.vdot(v, y[0]), V, B),
    "dist": (lambda L, T, x, y: L.dist(x, y), A, B),
    "dist_p": (lambda L, T, x, y: x.dist(y, 3), A, B),
    "addmv": (lambda L, T, w, x, v: L.addmv(w, x, v, beta=0.5, alpha=2), W, A, V),
    "addmv_method": (lambda L, T, w, x, v: w.addmv(x, v), W, A, V),
    "addr": (lambda L, T, x, w, v: L.addr(x, w, v, alpha=3), A, W, V),
    "addbmm": (lambda L, T, x, b1, b2: L.addbmm(x, b1, b2, beta=2), A, BATCH, BATCH2),
    "chain_matmul": (lambda L, T, s, x: L.chain_matmul(x, s, s), SQUARE, A),
    "select_scatter": (lambda L, T, x, v: L.select_scatter(x, v, 0, 1), A, V),
    "slice_scatter": (lambda L, T, x, y: L.slice_scatter(x, y[:, :2], 1, 0, 4, 2), A, B),
    "slice_scatter_default": (lambda L, T, x, y: x.slice_scatter(y[:1], start=2), A, B),
    "diagonal_scatter": (lambda L, T, x, w: L.diagonal_scatter(x, w, 1), A, W),
    "diagonal_scatter_dims": (
        lambda L, T, b, v: L.diagonal_scatter(b, v[:2].expand(3, 2).contiguous(), 0, 0, 2),
        BATCH,
        V,
    ),
    "index_fill": (lambda L, T, x: L.index_fill(x, 1, T([0, 2]), -1.5), A),
    "index_fill_tensor_value": (lambda L, T, x, y: x.index_fill(0, T([2]), y[0, 0]), A, B),
    "index_put": (lambda L, T, x, v: L.index_put(x, (T([0, 2]),), v), A, V),
    "index_put_accumulate": (
        lambda L, T, x, y: L.index_put(x, (T([0, 0, 2]), T([1, 1, 3])), y[0, :3], accumulate=True),
        A,
        B,
    ),
    "index_put_mask_accumulate": (
        lambda L, T, x, y: x.index_put((T([True, False, True]),), y[0], True),
        A,
        B,
    ),
    "put": (lambda L, T, x, v: L.put(x, T([0, 5, -1, 7]), v), A, V),
    "put_accumulate": (
        lambda L, T, x, v: x.put(T([[0, 0], [11, 3]]), v.reshape(2, 2), accumulate=True),
        A,
        V,
    ),
    "masked_scatter": (lambda L, T, x, y: L.masked_scatter(x, x > 0, y), A, B),
    "masked_scatter_broadcast": (
        lambda L, T, x, y: x.masked_scatter(T([True, False, True, False]), y),
        A,
        B,
    ),
    "index_reduce_prod": (lambda L, T, x, y: L.index_reduce(x, 0, T([0, 0, 2]), y, "prod"), A, B),
    "index_reduce_mean": (
        lambda L, T, x, y: x.index_reduce(1, T([1, 0, 1, 3]), y, "mean", include_self=False),
        A,
        B,
    ),
    "index_reduce_amax": (lambda L, T, x, y: L.index_reduce(x, 0, T([1, 2, 0]), y, "amax"), A, B),
    "positive": (lambda L, T, x: L.positive(x) * 2, A),
    "resolve_conj": (lambda L, T, x: L.resolve_conj(x).resolve_neg() * 2, A),
}

VALUES_ONLY = {
    "nextafter": (lambda L, T, x, y: L.nextafter(x, y), A, B),
    "isposinf": (lambda L, T: L.isposinf(T([1.0, float("inf"), -float("inf"), float("nan")])),),
    "isneginf": (lambda L, T: T([1.0, float("inf"), -float("inf")]).isneginf(),),
    "isposinf_int": (lambda L, T: L.isposinf(T([1, 2])),),
    "isreal": (lambda L, T, x: L.isreal(x), A),
    "isin": (lambda L, T: L.isin(T([1, 2, 3, 4]), T([2, 4, 6])),),
    "isin_invert": (lambda L, T: L.isin(T([[1, 2], [3, 4]]), 3, invert=True),),
    "isin_scalar_elements": (lambda L, T: L.isin(2, T([1, 2])),),
    "frexp_exponent": (lambda L, T, x: L.frexp(x * 100)[1], A),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_like_torch(torch, device, name):
    fn, *arrays = DIFFERENTIABLE[name]
    check_like_torch(torch, device, fn, *arrays)


@pytest.mark.parametrize("name", sorted(VALUES_ONLY))
def test_values_like_torch(torch, device, name):
    fn, *arrays = VALUES_ONLY[name]
    check_like_torch(torch, device, fn, *arrays, check_grads=False)


def test_predicates_like_torch(torch):
    for lib in (aa, torch):
        x = lib.tensor([[1.0, 2.0]])
        assert lib.is_nonzero(lib.tensor([0.5])) and not lib.is_nonzero(lib.tensor(0))
        assert lib.is_same_size(x, x.clone()) and not lib.is_same_size(x, x.t())
        assert lib.is_signed(x) and not lib.is_signed(lib.tensor([1], dtype=lib.uint8))
        assert not lib.is_signed(lib.tensor([True]))
        assert not lib.is_conj(x) and not lib.is_neg(x) and not x.is_conj()
        assert lib.resolve_conj(x) is x and lib.resolve_neg(x) is x


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda L: L.is_nonzero(L.tensor([1.0, 2.0])), RuntimeError, "more than one value"),
        (lambda L: L.is_nonzero(L.tensor([])), RuntimeError, "with no values is ambiguous"),
        (lambda L: L.positive(L.tensor([True])), RuntimeError, "on a bool tensor"),
        (lambda L: L.inner(L.ones(2, 3), L.ones(4)), RuntimeError, "last dimension must match"),
        (lambda L: L.vdot(L.ones(2, 3), L.ones(3)), RuntimeError, "1D tensors expected"),
        (
            lambda L: L.addmv(L.ones(2, 2), L.ones(2, 2), L.ones(2)),
            RuntimeError,
            "vector \\+ matrix @ vector expected, got 2, 2, 1",
        ),
        (
            lambda L: L.logaddexp(L.tensor([1]), L.tensor([2])),
            NotImplementedError,
            "\"logaddexp_cpu\" not implemented for 'Long'",
        ),
        (lambda L: L.frexp(L.tensor([3])), RuntimeError, "only supports floating-point"),
        (
            lambda L: L.select_scatter(L.zeros(3, 4), L.ones(3), 0, 0),
            RuntimeError,
            "expected src to have a size equal to the slice of self. src size = \\[3\\], slice "
            "size = \\[4\\]",
        ),
        (
            lambda L: L.index_fill(L.zeros(3, 4), 1, L.tensor([0]), L.tensor([2.0])),
            RuntimeError,
            "only supports a 0-dimensional value tensor",
        ),
        (
            lambda L: L.masked_scatter(L.zeros(3, 4), L.zeros(3, 4) == 0, L.ones(5)),
            RuntimeError,
            "Number of elements of source < number of ones in mask",
        ),
        (
            lambda L: L.put(L.zeros(3, 4), L.tensor([12]), L.ones(1)),
            IndexError,
            "tried to access index 12 on a tensor of 12 elements",
        ),
        (lambda L: L.isposinf(L.tensor([1j])), RuntimeError, "does not support complex inputs"),
    ],
)
def test_errors_like_torch(torch, call, error, message):
    for lib in (aa, torch):
        with pytest.raises(error, match=message):
            call(lib)


def test_nextafter_gradients_are_pytorchs(torch):
    # PyTorch: the identity for input, zeros for other.
    x = aa.tensor([1.0, -3.0], dtype=aa.float64, requires_grad=True)
    y = aa.tensor([2.0, -4.0], dtype=aa.float64, requires_grad=True)
    (aa.nextafter(x, y) * aa.tensor([2.0, 5.0], dtype=aa.float64)).sum().backward()
    tx = torch.tensor([1.0, -3.0], dtype=torch.float64, requires_grad=True)
    ty = torch.tensor([2.0, -4.0], dtype=torch.float64, requires_grad=True)
    (torch.nextafter(tx, ty) * torch.tensor([2.0, 5.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())


def test_chain_matmul_warns_of_its_deprecation():
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        aa.chain_matmul(aa.ones(2, 2), aa.ones(2, 2))


def test_gradients_where_pytorch_computes_another(torch, device):
    """PyTorch's ldexp slope is pow(2, other) in the exponent's integer dtype (0 for a negative
    exponent), and its as_strided_scatter input gradient keeps only the written region: both
    fail PyTorch's own gradcheck. Here they are the derivatives, checked by finite differences;
    the values still match PyTorch's."""
    x = aa.tensor(A, device=device, requires_grad=True)
    w = aa.tensor(W, device=device, requires_grad=True)
    exponent = aa.tensor([1, -2, 0, 3], device=device)
    assert aa.autograd.gradcheck(lambda t: aa.ldexp(t, exponent), (x,))
    assert aa.autograd.gradcheck(lambda t, s: aa.as_strided_scatter(t, s, (3,), (5,)), (x, w))
    ours = aa.as_strided_scatter(x, w, (3,), (5,)).detach().cpu().numpy()
    theirs = torch.as_strided_scatter(torch.tensor(A), torch.tensor(W), (3,), (5,)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(
        aa.ldexp(x, exponent).detach().cpu().numpy(),
        torch.ldexp(torch.tensor(A), torch.tensor([1, -2, 0, 3])).numpy(),
    )
