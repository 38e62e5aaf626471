"""repeat, repeat_interleave, flip, roll, movedim, swapaxes, unflatten, reshape_as, expand_as, t,
mT, tril, triu, diag: against PyTorch on every device; views share storage and versions."""

from __future__ import annotations

import numpy as np
import pytest
from torch_reference import check_like_torch

import autograd_async as aa

RNG = np.random.default_rng(7)
A = RNG.standard_normal((2, 3, 4))
M = RNG.standard_normal((3, 4))
V = RNG.standard_normal(3)

CASES = {
    "repeat": (lambda lib, T, x: x.repeat(2, 1, 3), A),
    "repeat_new_dims": (lambda lib, T, x: x.repeat(2, 1, 2), M),
    "repeat_interleave_int": (lambda lib, T, x: x.repeat_interleave(2, dim=1), A),
    "repeat_interleave_flat": (lambda lib, T, x: lib.repeat_interleave(x, 3), M),
    "repeat_interleave_tensor": (lambda lib, T, x: x.repeat_interleave(T([1, 0, 3]), dim=0), M),
    "flip": (lambda lib, T, x: x.flip(0, 2), A),
    "flip_list": (lambda lib, T, x: lib.flip(x, [-1]), M),
    "fliplr": (lambda lib, T, x: lib.fliplr(x), M),
    "roll": (lambda lib, T, x: x.roll(1, 2), A),
    "roll_many": (lambda lib, T, x: lib.roll(x, (-1, 5), (0, 2)), A),
    "roll_flat": (lambda lib, T, x: x.roll(4), A),
    "movedim": (lambda lib, T, x: x.movedim(0, -1), A),
    "movedim_many": (lambda lib, T, x: lib.movedim(x, (0, 2), (2, 0)), A),
    "moveaxis": (lambda lib, T, x: lib.moveaxis(x, 1, 0), A),
    "swapaxes": (lambda lib, T, x: x.swapaxes(0, 2), A),
    "swapdims": (lambda lib, T, x: lib.swapdims(x, 1, 2), A),
    "unflatten": (lambda lib, T, x: x.unflatten(2, (2, 2)), A),
    "unflatten_inferred": (lambda lib, T, x: lib.unflatten(x, -1, (-1, 2)), M),
    "reshape_as": (lambda lib, T, x, y: x.reshape_as(y), A, RNG.standard_normal((4, 6))),
    "expand_as": (lambda lib, T, x, y: x.expand_as(y), V[:, None], M),
    "t": (lambda lib, T, x: x.t(), M),
    "t_1d": (lambda lib, T, x: lib.t(x), V),
    "mT": (lambda lib, T, x: x.mT, A),
    "tril": (lambda lib, T, x: x.tril(), M),
    "tril_batched": (lambda lib, T, x: lib.tril(x, -1), A),
    "triu": (lambda lib, T, x: lib.triu(x, 1), M),
    "triu_batched": (lambda lib, T, x: x.triu(diagonal=-1), A),
    "diag_of_vector": (lambda lib, T, x: lib.diag(x), V),
    "diag_of_vector_offset": (lambda lib, T, x: x.diag(-2), V),
    "diag_of_matrix": (lambda lib, T, x: lib.diag(x), M),
    "diag_of_matrix_offset": (lambda lib, T, x: x.diag(2), M),
    "diag_of_matrix_below": (lambda lib, T, x: x.diag(diagonal=-1), M),
}


@pytest.mark.parametrize("name", list(CASES))
def test_like_torch(torch, device: str, name: str) -> None:
    fn, *arrays = CASES[name]
    check_like_torch(torch, device, fn, *arrays)


def test_node_names(torch) -> None:
    for name, (fn, *arrays) in CASES.items():
        ours = fn(aa, aa.tensor, *(aa.tensor(a, requires_grad=True) for a in arrays))
        ref = fn(torch, torch.tensor, *(torch.tensor(a, requires_grad=True) for a in arrays))
        assert ours.grad_fn.name() == ref.grad_fn.name(), name


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.movedim(0, 1),
        lambda x: x.swapaxes(0, 1),
        lambda x: x.unflatten(1, (2, 2)),
        lambda x: x.reshape_as(aa.zeros(12)),
        lambda x: x.t(),
        lambda x: x.reshape(-1).t(),
        lambda x: x.mT,
        lambda x: x[:, :1].expand_as(x),
    ],
)
def test_views_share_storage_and_version(view) -> None:
    x = aa.zeros(3, 4)
    v = view(x)
    assert np.shares_memory(v._data, x._data)
    x.add_(1.0)
    assert v._version == x._version == 1
    assert float(v.sum()) == 12.0


@pytest.mark.parametrize(
    "copy",
    [
        lambda x: x.flip(0),
        lambda x: x.roll(1, 0),
        lambda x: x.repeat(1, 1),
        lambda x: x.repeat_interleave(aa.tensor([1, 1, 1]), 0),
        lambda x: x.tril(),
        lambda x: aa.diag(x),
    ],
)
def test_copies_do_not_share_storage(copy) -> None:
    x = aa.zeros(3, 4)
    assert not np.shares_memory(copy(x)._data, x._data)


def test_repeat_interleave_of_counts(torch) -> None:
    counts = [2, 0, 1]
    assert (
        aa.repeat_interleave(aa.tensor(counts)).tolist()
        == torch.repeat_interleave(torch.tensor(counts)).tolist()
    )


def test_create_graph_through_diag_tril_flip() -> None:
    m = aa.tensor(M, requires_grad=True)
    v = aa.tensor(V, requires_grad=True)
    assert aa.autograd.gradgradcheck(lambda x: (aa.diag(x, 1) * x.tril().flip(1)[:3, 0]) ** 2, (m,))
    assert aa.autograd.gradgradcheck(lambda x: (aa.diag(x) ** 2).roll(1, 0).repeat(2, 1), (v,))


ERRORS = [
    (
        lambda x: x.repeat(2),
        RuntimeError,
        "repeat: Number of dimensions of repeat dims can not be smaller",
    ),
    (lambda x: x.repeat_interleave(-1), RuntimeError, "repeat_interleave: Repeats must be non-neg"),
    (
        lambda x: x.repeat_interleave(aa.tensor([1, 2], device=x.device), 0),
        RuntimeError,
        "repeat_interleave: repeats must have the same size as input along dim 0",
    ),
    (lambda x: x.flip(3), IndexError, "Dimension out of range"),
    (lambda x: x.flip(0, 0), RuntimeError, "flip: dims has duplicates"),
    (
        lambda x: x.roll((1,), (0, 1)),
        RuntimeError,
        "roll: shifts and dimensions must align. shifts: 1, dims:2",
    ),
    (lambda x: x.roll((1, 2)), RuntimeError, "roll: shifts and dimensions must align"),
    (lambda x: x.movedim(0, 5), IndexError, "Dimension out of range"),
    (
        lambda x: x.movedim((0, 1), (0,)),
        RuntimeError,
        "movedim: Invalid source or destination dims: source \\(\\[0, 1\\] dims\\)",
    ),
    (lambda x: x.movedim((0, 0), (0, 1)), RuntimeError, "movedim: repeated dim in `source`"),
    (
        lambda x: x.unflatten(1, (3, 2)),
        RuntimeError,
        "unflatten: Provided sizes \\[3, 2\\] don't multiply up to the size of dim 1 \\(4\\)",
    ),
    (lambda x: x.unflatten(1, (-1, -1)), RuntimeError, "unflatten: only one dimension"),
    (lambda x: x.reshape_as(aa.zeros(5)), RuntimeError, "shape '\\[5\\]' is invalid for input"),
    (lambda x: x[0].tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda x: x[0].triu(), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
    (lambda x: aa.diag(x.unsqueeze(0)), RuntimeError, "diag\\(\\): Supports 1D or 2D tensors. Go"),
    (lambda x: x.unsqueeze(0).t(), RuntimeError, "t\\(\\) expects a tensor with <= 2 dimensions"),
    (lambda x: x[0].mT, RuntimeError, "tensor.mT is only supported on matrices or batches"),
]


@pytest.mark.parametrize(("fn", "error", "match"), ERRORS, ids=[m[:24] for *_, m in ERRORS])
def test_errors(device: str, fn, error, match) -> None:
    with pytest.raises(error, match=match):
        fn(aa.tensor(M, device=device))
