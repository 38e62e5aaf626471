"""Shape ops, views, concatenation and splitting, and indexing with every kind of key."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import check_op, compare_torch, to_numpy

import autograd_async as aa

A = np.random.default_rng(0).standard_normal((2, 3, 4))


@pytest.mark.parametrize(
    ("ours", "ref"),
    [
        (lambda x: x.reshape(6, 4), lambda a: a.reshape(6, 4)),
        (lambda x: x.reshape(-1), lambda a: a.reshape(-1)),
        (lambda x: x.view(4, -1), lambda a: a.reshape(4, -1)),
        (lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
        (lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
        (lambda x: x.T, lambda a: a.T),
        (lambda x: x.mT, lambda a: a.swapaxes(-1, -2)),
        (lambda x: x.T.reshape(-1), lambda a: a.T.reshape(-1)),
        (lambda x: x.unsqueeze(1).squeeze(1), lambda a: a),
        (lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
        (lambda x: x[:, :1].squeeze(), lambda a: a[:, 0]),
        (lambda x: x[:1, :1].squeeze((0, 1)), lambda a: a[0, 0]),
        (lambda x: x[:, :1].expand(5, 2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (5, 2, 3, 4))),
        (lambda x: x[0, 0].expand(3, -1), lambda a: np.broadcast_to(a[0, 0], (3, 4))),
        (lambda x: x.flatten(), lambda a: a.reshape(-1)),
        (lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
        (lambda x: x.flatten(0, 1), lambda a: a.reshape(6, 4)),
        (lambda x: x.T.contiguous(), lambda a: a.T),
        (lambda x: x.clone(), lambda a: a),
        (lambda x: aa.cat([x, x * 2], 1), lambda a: np.concatenate([a, a * 2], 1)),
        (lambda x: aa.cat([x[:, :1], x], -2), lambda a: np.concatenate([a[:, :1], a], -2)),
        (lambda x: aa.stack([x, x * 3], 2), lambda a: np.stack([a, a * 3], 2)),
        (lambda x: x.split(3, -1)[1], lambda a: a[..., 3:]),
        (lambda x: x.split([1, 2], 1)[1] * 2, lambda a: a[:, 1:] * 2),
        (lambda x: x.chunk(2, 2)[0] + x.chunk(2, 2)[1], lambda a: a[..., :2] + a[..., 2:]),
        (lambda x: x.unbind(1)[2], lambda a: a[:, 2]),
    ],
)
def test_shape_ops(ours, ref) -> None:
    check_op(ours, ref, A)


KEYS = [
    0,
    -1,
    (1, 2),
    (1, 2, 3),
    slice(None, None, 2),
    (slice(None), slice(1, None)),
    (Ellipsis, 1),
    (None, 0),
    (0, None, slice(None, None, -1)),
    [0, 0, 1],
    ([1, 0, 1], [2, 2, 0]),
    (slice(None), [0, 0, 2], slice(1, 3)),
    np.array([True, False]),
    A[:, :, 0] > 0,
    A > 0.5,
]


@pytest.mark.parametrize("key", KEYS, ids=[f"key{i}" for i in range(len(KEYS))])
def test_getitem(key) -> None:
    check_op(lambda x: x[key], lambda a: a[key], A)


def test_getitem_with_tensor_keys_and_node_names(torch) -> None:
    x = aa.tensor(A, requires_grad=True)
    assert x[0].grad_fn.name() == "SelectBackward0"
    assert x[:, 1:].grad_fn.name() == "SliceBackward0"
    assert x[[0, 1]].grad_fn.name() == "IndexBackward0"
    idx = aa.tensor([2, 0, 2])
    check_op(lambda t: t[:, idx], lambda a: a[:, [2, 0, 2]], A)
    check_op(lambda t: t[aa.tensor(1)], lambda a: a[1], A)
    compare_torch(torch, lambda t: t[t > 0] * 2, lambda t: t[t > 0] * 2, A)
    compare_torch(
        torch, lambda t: t[[0, 0, 1], :, [3, 3, 1]], lambda t: t[[0, 0, 1], :, [3, 3, 1]], A
    )


def test_repeated_indices_accumulate() -> None:
    x = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_views_share_storage_and_version() -> None:
    x = aa.randn(2, 3)
    v = x.T
    w = v[0]
    assert np.shares_memory(to_numpy(x), to_numpy(w))
    x.add_(1)
    assert v._version == x._version == w._version == 1
    y = x.T.reshape(-1)  # a copy: no view of non-contiguous data in that shape
    assert not np.shares_memory(to_numpy(x), to_numpy(y))
    assert y.grad_fn is None and y._base is None


def test_split_pieces_are_views_and_unused_pieces_get_zeros() -> None:
    x = aa.randn(5, 2, requires_grad=True)
    pieces = x.split(2)
    assert [p.shape for p in pieces] == [(2, 2), (2, 2), (1, 2)]
    assert pieces[0].grad_fn is pieces[1].grad_fn and pieces[0].grad_fn.name() == "SplitBackward0"
    (pieces[1] * 3).sum().backward()
    assert to_numpy(x.grad).tolist() == [[0, 0], [0, 0], [3, 3], [3, 3], [0, 0]]
    assert pieces[2]._base is x


def test_torch_shape_ops(torch) -> None:
    for fn in (
        lambda t: t.permute(1, 2, 0).reshape(3, 8).T @ t[0],
        lambda t: t.transpose(0, 1).flatten(1).unsqueeze(0).expand(2, 3, 8),
        lambda t: t.split([1, 3], 2)[1].sum(-1),
        lambda t: t.chunk(3, 1)[2] * t[:, :1],
    ):
        compare_torch(torch, fn, fn, A)
    compare_torch(
        torch,
        lambda a, b: aa.cat([a, b], 0).sum(1),
        lambda a, b: torch.cat([a, b]).sum(1),
        A,
        A[:1],
    )
    compare_torch(
        torch, lambda a, b: aa.stack([a, b], -1), lambda a, b: torch.stack([a, b], -1), A, A * 2
    )


def test_second_derivatives_through_indexing_and_cat() -> None:
    from autograd_async.autograd import gradgradcheck

    x = aa.tensor(A[0], requires_grad=True)
    assert gradgradcheck(lambda t: aa.cat([t[[0, 0]], t[1:] ** 2]).T ** 2, (x,))
    assert gradgradcheck(lambda t: aa.stack(t.split(2, 1), 0).sum(0) ** 3, (x,))


def test_shape_errors() -> None:
    x = aa.randn(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        x.reshape(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size"):
        x.T.view(6)
    with pytest.raises(
        RuntimeError,
        match=r"expanded size of the tensor \(4\) must match the "
        r"existing size \(3\) at non-singleton dimension 1",
    ):
        x.expand(2, 4)
    with pytest.raises(
        RuntimeError,
        match=r"Sizes of tensors must match except in dimension 0. "
        r"Expected size 3 but got size 2 for tensor number 1",
    ):
        aa.cat([x, aa.randn(1, 2)])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor \\(at position 0\\)"):
        aa.cat([aa.tensor(1.0)])
    with pytest.raises(
        RuntimeError,
        match=r"stack expects each tensor to be equal size, but got "
        r"\[2, 3\] at entry 0 and \[3\] at entry 1",
    ):
        aa.stack([x, aa.randn(3)])
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly"):
        x.split([1, 2])
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match="only integers, slices"):
        x["a"]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[aa.tensor([0.0])]


@pytest.mark.parametrize("name", ["cat", "stack"])
def test_cat_and_stack_errors_name_our_function(name, torch) -> None:
    ours, theirs = getattr(aa, name), getattr(torch, name)
    with pytest.raises(
        TypeError,
        match=rf"^{name}\(\): expected a list of Tensors, got list at "
        "position 0",
    ):
        ours([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match=r"got torch\.Tensor at position 1"):
        ours([aa.ones(2), torch.ones(2)])
    # A tensor is not a list of its rows, here as in PyTorch.
    for fn, make in ((ours, aa.ones), (theirs, torch.ones)):
        with pytest.raises(
            TypeError,
            match=rf"^{name}\(\): argument 'tensors' \(position 1\) "
            "must be tuple of Tensors, not Tensor",
        ):
            fn(make(2, 3))
