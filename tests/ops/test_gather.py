"""gather, take_along_dim, index_select, masked_select, scatter, scatter_add, index_add,
index_copy, masked_fill (and in-place forms), nonzero: against PyTorch, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
S = RNG.standard_normal((2, 4))
V = RNG.standard_normal((2, 2))
MASK = [[True, False, True, False], [False, False, True, True], [True, True, False, False]]

CASES = {
    "gather": (lambda lib, T, x: x.gather(1, T([[0, 0, 3], [2, 1, 1], [3, 3, 3]])), A),
    "gather_dim0_smaller": (lambda lib, T, x: lib.gather(x, 0, T([[2, 0], [1, 1]])), A),
    "take_along_dim": (lambda lib, T, x: lib.take_along_dim(x, T([[1], [0], [3]]), 1), A),
    "take_along_dim_broadcast": (lambda lib, T, x: lib.take_along_dim(x, T([[2, 2, 0, 1]]), 0), A),
    "take_along_dim_flat": (lambda lib, T, x: lib.take_along_dim(x, T([11, 0, 0, 5])), A),
    "index_select": (lambda lib, T, x: x.index_select(1, T([3, 0, 0])), A),
    "index_select_neg_dim": (lambda lib, T, x: lib.index_select(x, -2, T([2, 2])), A),
    "masked_select": (lambda lib, T, x: x.masked_select(T(MASK)), A),
    "masked_select_broadcast": (
        lambda lib, T, x: x.masked_select(T([True, False, False, True])),
        A,
    ),
    "scatter": (lambda lib, T, x, s: x.scatter(1, T([[0, 3], [2, 1]]), s), A, V),
    "scatter_value": (lambda lib, T, x: x.scatter(0, T([[2, 0, 1, 2]]), 1.5), A),
    "scatter_add": (lambda lib, T, x, s: x.scatter_add(1, T([[0, 0], [3, 3]]), s), A, V),
    "scatter_add_dim0": (
        lambda lib, T, x, s: lib.scatter_add(x, 0, T([[0, 2, 2, 0]]), s[:1]),
        A,
        S,
    ),
    "index_add": (lambda lib, T, x, s: x.index_add(0, T([2, 2]), s), A, S),
    "index_add_alpha": (lambda lib, T, x, s: x.index_add(0, T([0, 1]), s, alpha=-2.0), A, S),
    "index_copy": (lambda lib, T, x, s: x.index_copy(0, T([2, 0]), s), A, S),
    "masked_fill": (lambda lib, T, x: x.masked_fill(T(MASK), -1.0), A),
    "masked_fill_tensor_value": (lambda lib, T, x, v: x.masked_fill(T(MASK), v.sum()), A, V),
    "masked_fill_broadcast": (
        lambda lib, T, x: lib.masked_fill(x, T([[True], [False], [True]]), 0.5),
        A,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_like_torch(torch, device: str, name: str) -> None:
    fn, *arrays = CASES[name]
    check_like_torch(torch, device, fn, *arrays)


def test_a_source_larger_than_the_index_gets_zero_gradient_outside_it(device: str) -> None:
    # PyTorch's own backward refuses this case (its gradient has the index's shape).
    index = aa.tensor([[0, 3], [2, 1]], device=device)
    rows, cols = np.array([[0, 0], [1, 1]]), np.array([[0, 3], [2, 1]])

    def scatter_np(x, s):
        out = x.copy()
        out[rows, cols] = s[:2, :2]
        return out

    def scatter_add_np(x, s):
        out = x.copy()
        np.add.at(out, (rows, cols), s[:2, :2])
        return out

    check_op(lambda x, s: x.scatter(1, index, s), scatter_np, A, S, device=device)
    check_op(lambda x, s: x.scatter_add(1, index, s), scatter_add_np, A, S, device=device)


def test_node_names(torch) -> None:
    x = aa.tensor(A, requires_grad=True)
    t = torch.tensor(A, requires_grad=True)
    for name, (fn, *arrays) in CASES.items():
        if len(arrays) > 1:
            continue
        ours, ref = fn(aa, aa.tensor, x), fn(torch, torch.tensor, t)
        assert ours.grad_fn.name() == ref.grad_fn.name(), name


def test_in_place_forms_bump_the_version_and_match_torch(torch, device: str) -> None:
    cases = [
        (lambda lib, T, y, s: y.scatter_(1, T([[0, 3], [2, 1]]), s[:, :2])),
        (lambda lib, T, y, s: y.scatter_add_(1, T([[0, 0], [3, 3]]), s[:, :2])),
        (lambda lib, T, y, s: y.index_add_(0, T([2, 2]), s)),
        (lambda lib, T, y, s: y.index_copy_(0, T([2, 0]), s)),
        (lambda lib, T, y, s: y.masked_fill_(T(MASK), 2.0)),
    ]
    for fn in cases:

        def through_clone(lib, T, x, s, fn=fn):
            y = x * 1.0
            out = fn(lib, T, y, s)
            assert out is y
            return y * 2

        check_like_torch(torch, device, through_clone, A, S)
        y = aa.tensor(A, device=device)
        before = y._version
        fn(aa, lambda d: aa.tensor(d, device=device), y, aa.tensor(S, device=device))
        assert y._version == before + 1


def test_in_place_on_a_leaf_that_requires_grad_fails() -> None:
    x = aa.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.masked_fill_(aa.tensor(MASK), 0.0)


def test_in_place_refuses_to_grow_the_input() -> None:
    y = aa.zeros(1, 4, dtype=aa.float64)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        y.masked_fill_(aa.tensor(MASK), 1.0)


def test_nonzero(torch, device: str) -> None:
    data = np.array([[0, 1.5, 0], [2, 0, -1]])
    x = aa.tensor(data, device=device)
    ref = torch.tensor(data)
    out = x.nonzero()
    assert out.dtype == aa.int64 and out.device == aa.device(device)
    np.testing.assert_array_equal(out.tolist(), ref.nonzero().tolist())
    for ours, theirs in zip(
        aa.nonzero(x, as_tuple=True), torch.nonzero(ref, as_tuple=True), strict=True
    ):
        np.testing.assert_array_equal(ours.tolist(), theirs.tolist())
    assert aa.argwhere(x).tolist() == ref.argwhere().tolist()
    assert aa.nonzero(aa.tensor(3.0)).shape == (1, 0) == tuple(torch.tensor(3.0).nonzero().shape)


def test_repeated_indices_accumulate_in_gather_backward(device: str) -> None:
    x = aa.tensor([1.0, 2.0, 3.0], dtype=aa.float64, device=device, requires_grad=True)
    x.gather(0, aa.tensor([1, 1, 1, 0], device=device)).sum().backward()
    assert x.grad.tolist() == [1.0, 3.0, 0.0]


def test_create_graph_through_gather_and_scatter() -> None:
    x = aa.tensor(A, requires_grad=True)
    s = aa.tensor(S, requires_grad=True)
    y = (x.gather(1, aa.tensor([[0, 0], [1, 2], [3, 3]])) ** 2).sum()
    (gx,) = aa.autograd.grad(y, [x], create_graph=True)
    assert gx.requires_grad
    assert aa.autograd.gradgradcheck(
        lambda a, b: a.scatter_add(1, aa.tensor([[0, 0], [3, 3]]), b) ** 2, (x, s)
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, s: x.masked_fill(aa.tensor(MASK), 0.0) * x,
        lambda x, s: x.index_add(0, aa.tensor([2, 2]), s * s),
        lambda x, s: x.index_copy(0, aa.tensor([2, 0]), s) ** 2,
        lambda x, s: x.scatter(1, aa.tensor([[0, 3], [2, 1]]), s[:, :2]) ** 2,
        lambda x, s: (
            (x.masked_select(aa.tensor(MASK)) ** 3).sum() + s.index_select(1, aa.tensor([1]))
        ),
        lambda x, s: aa.take_along_dim(x, aa.tensor([[1], [0], [3]]), 1) ** 2 * s.sum(),
    ],
)
def test_second_derivatives(fn) -> None:
    x = aa.tensor(A, requires_grad=True)
    s = aa.tensor(S, requires_grad=True)
    assert aa.autograd.gradgradcheck(fn, (x, s))


ERRORS = [
    (
        lambda x, T: x.gather(1, T([[5]])),
        RuntimeError,
        "gather\\(\\): index 5 is out of bounds for dimension 1 with size 4",
    ),
    (lambda x, T: x.gather(1, T([[-1]])), RuntimeError, "gather\\(\\): index -1 is out of bounds"),
    (
        lambda x, T: x.gather(1, T([[0.0]])),
        RuntimeError,
        "gather\\(\\): Expected dtype int32/int64 for index",
    ),
    (
        lambda x, T: x.gather(1, T([0])),
        RuntimeError,
        "gather\\(\\): Index tensor must have the same number of dimensions as input tensor",
    ),
    (
        lambda x, T: x.gather(1, T([[0], [0], [0], [0]])),
        RuntimeError,
        "gather\\(\\): Expected index \\[4, 1\\] to be no larger than self \\[3, 4\\] apart from",
    ),
    (lambda x, T: x.gather(1, [[0]]), TypeError, "gather\\(\\): index must be a Tensor"),
    (lambda x, T: x.gather(2, T([[0]])), IndexError, "Dimension out of range"),
    (
        lambda x, T: x.scatter(1, T([[0]]), aa.ones(1, 1, device=x.device)),
        RuntimeError,
        "scatter\\(\\): Expected self.dtype to be equal to src.dtype",
    ),
    (
        lambda x, T: x.scatter(1, T([[0, 1, 2]]), x[:1, :2]),
        RuntimeError,
        "scatter\\(\\): Expected index \\[1, 3\\] .* no larger size than src \\[1, 2\\]",
    ),
    (
        lambda x, T: x.scatter_add(0, T([[9]]), x),
        RuntimeError,
        "scatter_add\\(\\): index 9 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda x, T: x.index_select(0, T([3])),
        IndexError,
        "index_select\\(\\): index 3 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda x, T: x.index_select(0, T([[0]])),
        IndexError,
        "index_select\\(\\): Index is supposed to be a vector",
    ),
    (
        lambda x, T: x.index_add(0, T([0]), x),
        RuntimeError,
        "index_add\\(\\): Number of indices \\(1\\) should be equal to source.size\\(dim\\)",
    ),
    (
        lambda x, T: x.index_copy(0, T([5]), x[:1]),
        IndexError,
        "index_copy\\(\\): index 5 is out of bounds",
    ),
    (
        lambda x, T: x.masked_fill(T(A), 1.0),
        RuntimeError,
        "masked_fill only supports boolean masks, but got mask with dtype float64",
    ),
    (
        lambda x, T: x.masked_fill(T(MASK), x[0]),
        RuntimeError,
        "masked_fill only supports a 0-dimensional value tensor",
    ),
    (
        lambda x, T: x.masked_select(T([[True]] * 2)),
        RuntimeError,
        "masked_select\\(\\): the shape of the mask \\[2, 1\\] is not broadcastable",
    ),
    (
        lambda x, T: aa.take_along_dim(x, T([0]), 1),
        RuntimeError,
        "take_along_dim\\(\\): input and indices should have the same number of dimensions",
    ),
]


@pytest.mark.parametrize(("fn", "error", "match"), ERRORS, ids=[m[:30] for *_, m in ERRORS])
def test_errors_name_the_op(device: str, fn, error, match) -> None:
    x = aa.tensor(A, device=device)
    with pytest.raises(error, match=match):
        fn(x, lambda d: aa.tensor(d, device=device))


def test_index_on_another_device_is_refused() -> None:
    with pytest.raises(aa.DeviceError, match="gather\\(\\): expected index on the input's device"):
        aa.tensor(A).gather(1, aa.tensor([[0]], device="sim:0"))
