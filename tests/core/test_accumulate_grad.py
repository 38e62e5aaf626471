"""AccumulateGrad: what a leaf's `.grad` is after one or more passes, and what it shares.

PyTorch steals a gradient into `.grad` only when nothing else refers to it, then adds later ones in
place; so `.grad` keeps its identity across passes and never aliases another leaf's `.grad` or the
gradient the caller passed in.
"""

from __future__ import annotations

import numpy as np

import autograd_async as aa

from .helpers import values


def accumulate_program(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    first = x.grad
    v0 = first._version
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    return x.grad is first, values(first), first._version - v0


def test_gradients_accumulate_into_the_same_tensor():
    same, grad, versions = accumulate_program(aa)
    assert same and versions == 2
    np.testing.assert_array_equal(grad, [8.0, 8.0])


def test_gradients_accumulate_into_the_same_tensor_in_pytorch(torch):
    same, grad, versions = accumulate_program(torch)
    assert same and versions == 2
    np.testing.assert_array_equal(grad, [8.0, 8.0])


def shared_gradient_program(lib):
    """AddBackward0 hands one gradient to both leaves; clipping one must not clip the other."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    (x + w).sum().backward()
    x.grad.mul_(10)
    after_first = values(w.grad)
    (x + w).sum().backward()
    x.grad.mul_(10)
    return after_first, values(w.grad), values(x.grad)


def test_two_leaves_never_share_a_grad_array():
    w_first, w_second, x_grad = shared_gradient_program(aa)
    np.testing.assert_array_equal(w_first, [1.0, 1.0])
    np.testing.assert_array_equal(w_second, [2.0, 2.0])
    np.testing.assert_array_equal(x_grad, [110.0, 110.0])


def test_two_leaves_never_share_a_grad_array_in_pytorch(torch):
    for ours, theirs in zip(shared_gradient_program(aa), shared_gradient_program(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_shared_gradients_stay_apart_under_hooks_and_anomaly_mode():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], requires_grad=True)
    y = x + w
    y.grad_fn.register_prehook(lambda go: None)  # the node takes the general path
    with aa.autograd.detect_anomaly():
        y.sum().backward()
    x.grad.mul_(10)
    np.testing.assert_array_equal(values(w.grad), [1.0, 1.0])


def callers_gradient_program(lib):
    """The caller's gradient reaches the leaves unchanged (a leaf root, a reshape, an add)."""
    g = lib.tensor([[1.0, 2.0]])
    a = lib.tensor([[1.0, 1.0]], requires_grad=True)
    b = lib.tensor([1.0, 1.0], requires_grad=True)
    c = lib.tensor([[0.0, 0.0]], requires_grad=True)
    a.backward(g)
    (b.reshape(1, 2) + c).backward(g)
    g.mul_(100)  # the caller reuses its buffer
    return values(a.grad), values(b.grad), values(c.grad)


def test_grad_never_aliases_the_callers_gradient():
    for grad in callers_gradient_program(aa):
        np.testing.assert_array_equal(grad.reshape(-1), [1.0, 2.0])


def test_grad_never_aliases_the_callers_gradient_in_pytorch(torch):
    a_grad, b_grad, c_grad = callers_gradient_program(torch)
    np.testing.assert_array_equal(a_grad.reshape(-1), [1.0, 2.0])
    np.testing.assert_array_equal(c_grad.reshape(-1), [1.0, 2.0])
    # PyTorch does steal a *view* of the caller's gradient (the reshape's backward) because only
    # the view's own reference count is checked, so b.grad follows the caller's buffer there:
    # a quirk we do not copy.
    np.testing.assert_array_equal(b_grad, [100.0, 200.0])


def test_a_fresh_first_gradient_is_stored_without_a_copy():
    class Give(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            ctx.made = g * 3
            return ctx.made

    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = Give.apply(x)
    y.sum().backward()
    assert x.grad._data is y.grad_fn.made._data  # nothing else held it: stolen, as PyTorch does


def test_a_user_set_grad_is_added_to():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    x.grad = aa.tensor([10.0, 10.0])
    (x * 2).sum().backward()
    np.testing.assert_array_equal(values(x.grad), [12.0, 12.0])
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_array_equal(values(x.grad), [2.0, 2.0])


def test_gradient_dtype_follows_the_leaf():
    x = aa.tensor([1.0, 2.0], dtype=aa.float32, requires_grad=True)
    (x * aa.tensor([1.0, 1.0], dtype=aa.float64)).sum().backward()
    assert x.grad.dtype == aa.float32


def test_broadcast_gradient_is_reduced_to_the_leaf_shape():
    b = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (aa.ones(4, 3) * b).sum().backward()
    np.testing.assert_array_equal(values(b.grad), [4.0, 4.0, 4.0])
