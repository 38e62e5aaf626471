"""sort, argsort, topk, kthvalue, msort and max/min along a dim: against PyTorch on every device."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

A = np.random.default_rng(5).standard_normal((3, 5))

CASES = {
    "sort": lambda lib, T, x: x.sort(),
    "sort_dim0_descending": lambda lib, T, x: lib.sort(x, 0, descending=True),
    "sort_stable": lambda lib, T, x: x.sort(dim=1, descending=True, stable=True),
    "topk": lambda lib, T, x: x.topk(2),
    "topk_smallest_dim0": lambda lib, T, x: lib.topk(x, 2, dim=0, largest=False),
    "kthvalue": lambda lib, T, x: x.kthvalue(2),
    "kthvalue_keepdim": lambda lib, T, x: lib.kthvalue(x, 3, 0, keepdim=True),
    "msort": lambda lib, T, x: lib.msort(x),
    "max_dim": lambda lib, T, x: x.max(dim=1),
    "min_dim_keepdim": lambda lib, T, x: lib.min(x, 0, keepdim=True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_like_torch(torch, device: str, name: str) -> None:
    check_like_torch(torch, device, CASES[name], A)


def test_named_results_and_node_names(torch) -> None:
    x, t = aa.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    for name in ("sort", "sort_stable", "topk", "kthvalue", "max_dim"):
        ours, ref = CASES[name](aa, aa.tensor, x), CASES[name](torch, torch.tensor, t)
        assert type(ours).__name__ == type(ref).__name__
        assert ours._fields == ("values", "indices")
        assert ours.values.grad_fn.name() == ref.values.grad_fn.name(), name
        assert ours.indices.grad_fn is None and ours.indices.dtype == aa.int64


def test_sort_is_stable_in_both_directions(torch, device: str) -> None:
    data = [3.0, 1.0, 3.0, float("nan"), 1.0, 2.0, 3.0]
    x, t = aa.tensor(data, device=device), torch.tensor(data)
    for descending in (False, True):
        ours = x.sort(descending=descending, stable=True)
        ref = t.sort(descending=descending, stable=True)
        assert ours.indices.tolist() == ref.indices.tolist()
        np.testing.assert_array_equal(ours.values.tolist(), ref.values.tolist())
        assert x.argsort(descending=descending, stable=True).tolist() == ref.indices.tolist()


def test_argsort_and_zero_dim(torch, device: str) -> None:
    x = aa.tensor(A, device=device)
    assert x.argsort(dim=0).tolist() == torch.tensor(A).argsort(dim=0).tolist()
    s = aa.tensor(2.5, device=device)
    assert s.sort().values.item() == 2.5 and s.sort().indices.shape == ()
    assert aa.argsort(s).item() == 0


def test_ties_share_nothing_in_backward(device: str) -> None:
    # sort's gradient goes to the element each position came from; ties pick one, never both.
    x = aa.tensor([1.0, 1.0, 0.0], dtype=aa.float64, device=device, requires_grad=True)
    x.sort(descending=True).values[0].backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]


def test_create_graph_through_topk() -> None:
    x = aa.tensor(A, requires_grad=True)
    assert aa.autograd.gradgradcheck(lambda t: t.topk(3, dim=1).values ** 2, (x,))


ERRORS = [
    (lambda x: x.topk(6), RuntimeError, "topk\\(\\): selected index k out of range"),
    (lambda x: x.topk(-1), RuntimeError, "topk\\(\\): selected index k out of range"),
    (
        lambda x: x.kthvalue(0),
        RuntimeError,
        "kthvalue\\(\\): selected number k out of range for dimension 1",
    ),
    (
        lambda x: x.kthvalue(4, 0),
        RuntimeError,
        "kthvalue\\(\\): selected number k out of range for dimension 0",
    ),
    (lambda x: x.sort(2), IndexError, "Dimension out of range .* but got 2"),
    (lambda x: x.argsort(dim=-3), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize(("fn", "error", "match"), ERRORS, ids=[m[:24] for *_, m in ERRORS])
def test_errors(device: str, fn, error, match) -> None:
    with pytest.raises(error, match=match):
        fn(aa.tensor(A, device=device))
