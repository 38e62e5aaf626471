"""Reductions over all or some dims (int, tuple, negative), keepdim, ties, var/std, logsumexp."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op, compare_torch, to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

import autograd_async as aa


def _lse(a: np.ndarray, axis, keepdims: bool) -> np.ndarray:
    m = a.max(axis=axis, keepdims=True)
    out = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda a, d, k: a.sum(axis=d, keepdims=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda a, d, k: a.mean(axis=d, keepdims=k)),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), lambda a, d, k: a.max(axis=d, keepdims=k)),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), lambda a, d, k: a.min(axis=d, keepdims=k)),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda a, d, k: a.var(axis=d, ddof=1, keepdims=k)),
    "std": (
        lambda x, d, k: x.std(d, correction=0, keepdim=k),
        lambda a, d, k: a.std(axis=d, keepdims=k),
    ),
    "logsumexp": (lambda x, d, k: x.logsumexp(d, keepdim=k), _lse),
}


@st.composite
def shape_and_dims(draw):
    shape = tuple(draw(st.lists(st.integers(2, 4), min_size=1, max_size=3)))
    n = len(shape)
    dims = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda d: d % n))
    dim = dims[0] if len(dims) == 1 and draw(st.booleans()) else tuple(dims)
    return shape, dim


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@settings(max_examples=15, deadline=None)
@given(case=shape_and_dims(), keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_reductions_over_dims(name: str, case, keepdim: bool, seed: int) -> None:
    shape, dim = case
    ours, ref = REDUCTIONS[name]
    axis = tuple(d % len(shape) for d in ((dim,) if isinstance(dim, int) else dim))
    a = np.random.default_rng(seed).standard_normal(shape)
    check_op(lambda x: ours(x, dim, keepdim), lambda v: ref(v, axis, keepdim), a, seed=seed)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std"])
def test_full_reductions(name: str) -> None:
    a = np.random.default_rng(0).standard_normal((3, 4))
    ref = {
        "sum": np.sum,
        "mean": np.mean,
        "var": lambda v: v.var(ddof=1),
        "std": lambda v: v.std(ddof=1),
    }[name]
    check_op(lambda x: getattr(x, name)(), ref, a)


def test_max_min_with_dim_return_values_and_indices(torch) -> None:
    a = np.random.default_rng(1).standard_normal((3, 4, 2))
    x = aa.tensor(a)
    out = x.max(1)
    assert out.values.shape == (3, 2) and out.indices.dtype == aa.int64
    values, indices = x.min(dim=-1, keepdim=True)
    assert values.shape == (3, 4, 1) and indices.shape == (3, 4, 1)
    compare_torch(torch, lambda t: t.max(1).values, lambda t: t.max(1).values, a)
    compare_torch(torch, lambda t: t.min(-1, keepdim=True)[0], lambda t: t.min(-1, True)[0], a)
    check_op(lambda t: t.max(0)[0], lambda v: v.max(0), a)
    xr = aa.tensor(a, requires_grad=True)
    assert xr.max(1).indices.requires_grad is False
    assert xr.max(1).values.grad_fn.name() == "MaxBackward0"
    assert xr.max().grad_fn.name() == "MaxBackward1"


def test_ties_follow_pytorch(torch) -> None:
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    for fn in (
        lambda t: t.max(),
        lambda t: t.min(),
        lambda t: t.amax(1),
        lambda t: t.amin(0),
        lambda t: t.max(1)[0],
        lambda t: t.min(1, keepdim=True)[0],
    ):
        compare_torch(torch, fn, fn, a)


def test_torch_reductions(torch) -> None:
    a = np.random.default_rng(2).standard_normal((3, 4, 5))
    for fn in (
        lambda t: t.sum((0, -1)),
        lambda t: t.mean(1, keepdim=True),
        lambda t: t.var(0, unbiased=False),
        lambda t: t.std((1, 2), correction=2),
        lambda t: t.logsumexp((0, 2)),
        lambda t: t.var(),
        lambda t: t.amax((0, 1)) * t.amin(-1).sum(),
    ):
        compare_torch(torch, fn, fn, a)


def test_second_derivative_of_reductions(torch) -> None:
    a = np.random.default_rng(5).standard_normal((3, 4))
    for fn in (
        lambda t: t.logsumexp(1).sum(),
        lambda t: t.std(0).sum(),
        lambda t: (t.var(1) * t.mean(1)).sum(),
    ):
        x = aa.tensor(a, requires_grad=True)
        (g,) = aa.autograd.grad(fn(x), x, create_graph=True)
        (gg,) = aa.autograd.grad((g * g).sum(), x)
        tx = torch.tensor(a, requires_grad=True)
        (tg,) = torch.autograd.grad(fn(tx), tx, create_graph=True)
        (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
        np.testing.assert_allclose(to_numpy(gg), tgg.numpy(), rtol=1e-8, atol=1e-10)


def test_integer_reductions() -> None:
    x = aa.tensor([[1, 2], [3, 4]])
    assert x.sum().dtype == aa.int64 and x.sum().item() == 10
    assert x.max(0).values.tolist() == [3, 4]
    assert aa.tensor([True, False, True]).sum().item() == 2


def test_reduction_errors() -> None:
    x = aa.randn(2, 3)
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of "
        r"\[-2, 1\], but got 2\)",
    ):
        x.sum(2)
    with pytest.raises(IndexError, match="but got -3"):
        x.max(-3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -2))
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype.*Got: Long"):
        aa.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        aa.zeros(0).max()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        aa.zeros(0, 2).max(0)


def test_zero_dim_reductions() -> None:
    x = aa.tensor(3.0, requires_grad=True)
    assert x.sum().shape == () and x.sum(0).shape == ()
    values, indices = x.max(0)
    assert values.item() == 3.0 and indices.item() == 0
    values.backward()
    assert x.grad.item() == 1.0


def test_reduction_result_is_an_array_not_a_numpy_scalar() -> None:
    out = aa.randn(3).sum()
    assert isinstance(out._data, np.ndarray) and out.shape == ()
