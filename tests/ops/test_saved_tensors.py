"""What ops save for backward, as PyTorch: only what the needed gradients use, so only that is
checked against in-place changes.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa

A0 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
B0 = np.array([[0.5, -1.0], [2.0, 1.5], [-0.5, 3.0]])
V0 = np.array([1.0, -2.0, 0.5])


def _grads(lib, *tensors):
    return [None if t.grad is None else to_numpy(t.grad) for t in tensors]


# ------------------------------------------------------- only needed inputs are saved
# Each case: (fn(lib, y, c) with y requiring grad and c a constant, the input shapes). The result
# depends on y through an op whose gradient for y does not need y itself (PyTorch saves only c).
UNNEEDED = {
    "mul": (lambda lib, y, c: y * c, (3,), (3,)),
    "rmul_tensor": (lambda lib, y, c: c * y, (3,), (3,)),
    "mul_scalar": (lambda lib, y, c: y * 3.0, (3,), (3,)),
    "div": (lambda lib, y, c: y / c, (3,), (3,)),
    "div_scalar": (lambda lib, y, c: y / 4.0, (3,), (3,)),
    "mm": (lambda lib, y, c: y @ c, (2, 3), (3, 2)),
    "mm_right": (lambda lib, y, c: c @ y, (3, 2), (2, 3)),
    "mv": (lambda lib, y, c: y @ c, (2, 3), (3,)),
    "vm": (lambda lib, y, c: y @ c, (3,), (3, 2)),
    "mv_vector": (lambda lib, y, c: c @ y, (3,), (2, 3)),
    "vm_vector": (lambda lib, y, c: c @ y, (3, 2), (3,)),
    "dot": (lambda lib, y, c: y @ c, (3,), (3,)),
    "bmm": (lambda lib, y, c: y @ c, (2, 2, 3), (2, 3, 2)),
    "linear": (lambda lib, y, c: lib.nn.functional.linear(y, c), (2, 3), (4, 3)),
    "linear_bias": (
        lambda lib, y, c: lib.nn.functional.linear(y, c, lib.ones(4, dtype=lib.float64)),
        (2, 3),
        (4, 3),
    ),
    "linear_weight": (lambda lib, y, c: lib.nn.functional.linear(c, y), (4, 3), (2, 3)),
}


def _values(shape, start):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64) + start).reshape(shape) / 3


def _change_y_after_forward(lib, name):
    fn, y_shape, c_shape = UNNEEDED[name]
    x = lib.tensor(_values(y_shape, 1), dtype=lib.float64, requires_grad=True)
    c = lib.tensor(_values(c_shape, -2.5), dtype=lib.float64)
    y = x * 1
    z = fn(lib, y, c)
    y.add_(1)  # PyTorch did not save y: nothing to check
    z.sum().backward()
    return to_numpy(x.grad) if lib is aa else x.grad.numpy()


def _expected(name):
    """The gradient of sum(fn(y, c)) for y: fn is linear in y, so it is fn(ones, c) summed back."""
    _, y_shape, c_shape = UNNEEDED[name]
    c = _values(c_shape, -2.5)
    base = np.asarray(_numpy_fn(name, np.zeros(y_shape), c)).sum()
    grad = np.zeros(y_shape)
    for index in np.ndindex(*y_shape):
        e = np.zeros(y_shape)
        e[index] = 1.0
        grad[index] = np.asarray(_numpy_fn(name, e, c)).sum() - base
    return grad


def _numpy_fn(name, y, c):
    if name.startswith("linear"):
        if name == "linear_weight":
            return c @ y.T
        return y @ c.T + (1.0 if name == "linear_bias" else 0.0)
    if name in ("mm_right", "mv_vector", "vm_vector"):
        return c @ y
    if name == "rmul_tensor":
        return c * y
    if name == "mul_scalar":
        return y * 3.0
    if name == "div_scalar":
        return y / 4.0
    if name == "div":
        return y / c
    if name == "mul":
        return y * c
    return y @ c


@pytest.mark.parametrize("name", UNNEEDED)
def test_an_input_no_gradient_needs_is_not_saved(name):
    np.testing.assert_allclose(_change_y_after_forward(aa, name), _expected(name), rtol=1e-12)


@pytest.mark.parametrize("name", UNNEEDED)
def test_an_input_no_gradient_needs_is_not_saved_in_pytorch(torch, name):
    np.testing.assert_allclose(_change_y_after_forward(torch, name), _expected(name), rtol=1e-12)


def _change_needed(lib, which):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=which == "both")
    y = x * 1
    c = w * 1
    z = (y * c).sum() if which != "div_other" else (c / y).sum()
    (c if which != "div_other" else y).add_(1)
    try:
        z.backward()
    except RuntimeError as e:
        return str(e).split(":")[0]
    return "fine"


@pytest.mark.parametrize("which", ["both", "one", "div_other"])
def test_what_a_gradient_needs_is_still_checked(which):
    assert _change_needed(aa, which) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation"
    )


@pytest.mark.parametrize("which", ["both", "one", "div_other"])
def test_what_a_gradient_needs_is_still_checked_in_pytorch(torch, which):
    assert _change_needed(torch, which) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation"
    )


def test_unsaved_inputs_read_as_none():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    c = aa.tensor([3.0, 4.0])
    node = (x * c).grad_fn
    a, b = node.saved(np.ones(2))
    assert a is None and b.tolist() == [3.0, 4.0]
    node = (c / x).grad_fn  # the gradient of x needs both
    assert [t.tolist() for t in node.saved(np.ones(2))] == [[3.0, 4.0], [1.0, 2.0]]
    node = (x / c).grad_fn
    a, b = node.saved(np.ones(2))
    assert a is None and b.tolist() == [3.0, 4.0]


def test_double_backward_through_partly_saved_nodes():
    def run(lib):
        x = lib.tensor(A0, dtype=lib.float64, requires_grad=True)
        c = lib.tensor(B0, dtype=lib.float64)
        v = lib.tensor(V0, dtype=lib.float64)
        y = ((x @ c).tanh().sum() + (x * v / (v + 4)).pow(2).sum() + (x @ v).exp().sum())
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return g, gg

    g, gg = run(aa)
    want_g, want_gg = _double_backward_numpy()
    np.testing.assert_allclose(to_numpy(g), want_g, rtol=1e-12)
    np.testing.assert_allclose(to_numpy(gg), want_gg, rtol=1e-7)


def _double_backward_numpy():
    eps = 1e-5

    def grad(x):
        t = np.tanh(x @ B0)
        s = V0 / (V0 + 4)
        return (1 - t * t) @ B0.T + 2 * x * s * s + np.exp(x @ V0)[:, None] * V0

    g = grad(A0)
    gg = np.zeros_like(A0)
    for index in np.ndindex(*A0.shape):
        e = np.zeros_like(A0)
        e[index] = eps
        gg[index] = ((grad(A0 + e) ** 2).sum() - (grad(A0 - e) ** 2).sum()) / (2 * eps)
    return g, gg


def test_double_backward_through_partly_saved_nodes_is_pytorchs(torch):
    def run(lib):
        x = lib.tensor(A0, dtype=lib.float64, requires_grad=True)
        c = lib.tensor(B0, dtype=lib.float64)
        v = lib.tensor(V0, dtype=lib.float64)
        y = (x @ c).tanh().sum() + (x * v / (v + 4)).pow(2).sum() + (x @ v).exp().sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return g, gg

    for ours, theirs in zip(run(aa), run(torch), strict=True):
        np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-12)
