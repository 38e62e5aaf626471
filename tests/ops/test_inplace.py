"""In-place ops: version counters, PyTorch's errors, rebased histories, views of changed bases."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck

X0 = np.arange(6.0).reshape(2, 3) / 7 + 0.1
W0 = np.array([2.0, -1.0, 0.5])


def _same_in_both(torch, fn) -> None:
    ours, theirs = fn(aa), fn(torch)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(to_numpy(a), t.detach().numpy(), rtol=1e-12)


def test_inplace_chain_matches_torch(torch) -> None:
    def run(lib):
        x = lib.tensor(X0, requires_grad=True)
        w = lib.tensor(W0, requires_grad=True)
        y = x * 1
        y.add_(w, alpha=2)
        y.mul_(w)
        y.sub_(1)
        y += w
        y *= 2
        y[0] = w * 3
        y[1, [0, 0]] = 7.0
        y.div_(w)
        y.sum().backward()
        return y, x.grad, w.grad

    _same_in_both(torch, run)


def test_inplace_through_views_matches_torch(torch) -> None:
    def run(lib):
        x = lib.tensor(X0, requires_grad=True)
        w = lib.tensor(W0, requires_grad=True)
        y = x * 1
        v = y[1]
        v.mul_(w)
        v[0] = 5.0
        y.T[1:].add_(w[:2])
        (y * y).sum().backward()
        return y, x.grad, w.grad

    _same_in_both(torch, run)


def test_copy_zero_fill_and_setitem_into_plain_tensors(torch) -> None:
    def run(lib):
        w = lib.tensor(W0, requires_grad=True)
        z = lib.zeros(2, 3, dtype=lib.float64)
        z.copy_(w * 2)
        z[:, 0] = w[1]
        a = lib.ones(3, dtype=lib.float64)
        a.mul_(w)
        b = (w * 1).zero_() + (w * 1).fill_(3.0)
        (z.sum() + (a * a).sum() + b.sum()).backward()
        return z, a, w.grad

    _same_in_both(torch, run)


def test_version_counter_bumps() -> None:
    x = aa.zeros(3)
    assert x._version == 0
    x.add_(1)
    x.mul_(2)
    x[0] = 5
    x.zero_()
    x += 1
    assert x._version == 5
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_leaf_errors() -> None:
    x = aa.ones(3, requires_grad=True)
    for change in (
        lambda: x.add_(1),
        lambda: x.mul_(2),
        lambda: x.zero_(),
        lambda: x.copy_(aa.ones(3)),
        lambda: x.__setitem__(0, 1.0),
    ):
        with pytest.raises(
            RuntimeError,
            match="a leaf Variable that requires grad is being used in an in-place operation.",
        ):
            change()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[:2].add_(1)
    with aa.no_grad():
        x.add_(1)  # allowed: how optimizers update parameters
    assert x.tolist() == [2.0, 2.0, 2.0] and x.grad_fn is None


def test_modified_saved_tensor_is_reported() -> None:
    x = aa.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead") as info:
        y.sum().backward()
    assert "which is output 0 of Exp, is at" in str(info.value)  # the node that saved it
    a = aa.ones(3, requires_grad=True) * 2
    b = a * a
    a.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_history_is_rebased() -> None:
    x = aa.randn(3, requires_grad=True)
    y = x * 2
    old = y.grad_fn
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    assert y.grad_fn.next_functions[0][0] is old
    z = aa.zeros(3)
    z[1:] = x[:2]
    assert z.grad_fn.name() == "torch::autograd::CopySlices"  # PyTorch's name for it
    assert z.requires_grad and not z.is_leaf
    z[[0]] = x[2:]
    assert z.grad_fn.name() == "IndexPutBackward0"


def test_inplace_errors() -> None:
    x = aa.zeros(3, dtype=aa.int64)
    with pytest.raises(
        RuntimeError, match="result type Float can't be cast to the desired output type Long"
    ):
        x.add_(1.5)
    y = aa.zeros(3)
    with pytest.raises(
        RuntimeError,
        match=r"output with shape \[3\] doesn't match the broadcast "
        r"shape \[2, 3\]",
    ):
        y.add_(aa.ones(2, 3))


def test_inplace_gradients_check_numerically() -> None:
    def fn(a):
        y = a * 1
        y[0] = a[1] ** 2
        y[:, 1:].mul_(a[0, :2])
        y.add_(a)
        return y

    x = aa.tensor(X0, requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_inplace_works_on_sim_devices(device: str) -> None:
    x = aa.ones(3, device=device, requires_grad=True)
    y = x * 2
    y.mul_(x)
    y[0] = 0.0
    y.sum().backward()
    assert x.grad.device == aa.device(device)
    assert to_numpy(x.grad).tolist() == [0.0, 4.0, 4.0]


def test_inplace_on_a_zero_dim_gradient() -> None:
    x = aa.tensor(3.0, requires_grad=True)
    (x * 2).backward()
    x.grad.zero_()
    x.grad += 1
    assert x.grad.item() == 1.0
