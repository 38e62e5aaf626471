"""What ops save for backward, as PyTorch: only what the needed gradients use (so only that is
checked against in-place changes), and only saved tensors are freed after backward (so a second
backward through nodes that saved nothing works, and through the others raises PyTorch's error).
"""

from __future__ import annotations

import numpy as np
import pytest
from autograd_async.ops.base import RELEASED_MESSAGE
from gradients import to_numpy

import autograd_async as aa
from autograd_async.autograd import Function

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
        y = (x @ c).tanh().sum() + (x * v / (v + 4)).pow(2).sum() + (x @ v).exp().sum()
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


# ------------------------------------------------------------ a second backward
def _f(lib):
    return lib.nn.functional


def _set_index(lib, x):
    y = x * 1
    y[[0, 2]] = lib.tensor([5.0, 6.0])
    return y


def _set_slice(lib, x):
    y = x + 1
    y[1:] = 0.0
    return y


def _view_add(lib, x):
    y = x + 1
    y[1:].add_(1)
    return y


# Each expression of x = [1, 2, 3], and whether PyTorch can backward through it a second time
# without retain_graph: it can when no node on the way saved a tensor.
SECOND = {
    # saves nothing (only scalars, sizes, dims): runs again
    "add_scalar": (lambda lib, x: x + 1, True),
    "radd": (lambda lib, x: 1 + x, True),
    "sub": (lambda lib, x: x - x.detach(), True),
    "rsub": (lambda lib, x: 2 - x, True),
    "neg": (lambda lib, x: -x, True),
    "sum_dim": (lambda lib, x: x.reshape(3, 1).sum(0), True),
    "mean": (lambda lib, x: x.mean(), True),
    "view": (lambda lib, x: x.reshape(3, 1), True),
    "transpose": (lambda lib, x: x.reshape(3, 1).transpose(0, 1), True),
    "permute": (lambda lib, x: x.reshape(1, 3).permute(1, 0), True),
    "squeeze": (lambda lib, x: x.reshape(3, 1).squeeze(1), True),
    "unsqueeze": (lambda lib, x: x.unsqueeze(0), True),
    "expand": (lambda lib, x: x.reshape(3, 1).expand(3, 2), True),
    "select": (lambda lib, x: x[0], True),
    "slice": (lambda lib, x: x[1:], True),
    "clone": (lambda lib, x: x.clone(), True),
    "cat": (lambda lib, x: lib.cat([x, x + 1]), True),
    "stack": (lambda lib, x: lib.stack([x, x]), True),
    "split": (lambda lib, x: x.split(1)[0], True),
    "to_double": (lambda lib, x: x.double(), True),
    # saves a tensor (a scalar operand counts: PyTorch wraps it in one): raises
    "mul_scalar": (lambda lib, x: x * 2, False),
    "rmul": (lambda lib, x: 2 * x, False),
    "div_scalar": (lambda lib, x: x / 2, False),
    "rdiv": (lambda lib, x: 2 / x, False),
    "pow": (lambda lib, x: x**2, False),
    "rpow": (lambda lib, x: 2**x, False),
    "matmul": (lambda lib, x: x @ lib.ones(3), False),
    "tanh": (lambda lib, x: x.tanh(), False),
    "exp": (lambda lib, x: x.exp(), False),
    "relu": (lambda lib, x: x.relu(), False),
    "softmax": (lambda lib, x: x.softmax(0), False),
    "clamp": (lambda lib, x: x.clamp(0, 2), False),
    "where": (lambda lib, x: lib.where(x.detach() > 1, x, 0.0), False),
    "max": (lambda lib, x: x.max(), False),
    "max_dim": (lambda lib, x: x.reshape(3, 1).max(0).values, False),
    "index": (lambda lib, x: x[[0, 2]], False),
    "mask": (lambda lib, x: x[x.detach() > 1], False),
    "set_index": (_set_index, False),
    "set_slice": (_set_slice, False),
    "view_add": (_view_add, False),
    "dropout": (lambda lib, x: _f(lib).dropout(x, 0.5), False),
    "cross_entropy": (
        lambda lib, x: _f(lib).cross_entropy(x.reshape(1, 3), lib.tensor([1])),
        False,
    ),
    "mse_loss": (lambda lib, x: _f(lib).mse_loss(x, lib.zeros(3)), False),
    "linear": (lambda lib, x: _f(lib).linear(x.reshape(1, 3), lib.ones(2, 3)), False),
    "var": (lambda lib, x: x.var(), False),
    "sum_then_tanh": (lambda lib, x: x.sum().tanh(), False),
}


def _backward_twice(lib, name):
    """'works' with the leaf's gradient after two passes, or the second pass's error message."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = SECOND[name][0](lib, x).sum()
    y.backward()
    first = x.grad.tolist()
    try:
        y.backward()
    except RuntimeError as e:
        assert x.grad.tolist() == first
        return str(e)
    np.testing.assert_allclose(x.grad.tolist(), [2 * g for g in first])
    return "works"


@pytest.mark.parametrize("name", SECOND)
def test_second_backward(name):
    expected = "works" if SECOND[name][1] else RELEASED_MESSAGE
    assert _backward_twice(aa, name) == expected


@pytest.mark.parametrize("name", SECOND)
def test_second_backward_is_pytorchs(torch, name):
    expected = "works" if SECOND[name][1] else RELEASED_MESSAGE
    assert _backward_twice(torch, name) == expected


def test_second_grad_through_metadata_only_nodes():
    x = aa.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = (x.transpose(0, 1).reshape(4)[1:] + 1).mean()
    (g1,) = aa.autograd.grad(y, x)
    (g2,) = aa.autograd.grad(y, x)
    np.testing.assert_allclose(to_numpy(g1), to_numpy(g2))
    np.testing.assert_allclose(to_numpy(g1), [[0.0, 1 / 3], [1 / 3, 1 / 3]])


def _functions_twice(lib, function_base):
    """A Function that keeps a number on ctx, and one that saves its input, backward twice."""

    class Scale(function_base):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class Square(function_base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    results = []
    for fn in (lambda x: Scale.apply(x, 3.0), Square.apply):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = fn(x).sum()
        y.backward()
        try:
            y.backward()
            results.append(x.grad.tolist())
        except RuntimeError as e:
            results.append(str(e) == RELEASED_MESSAGE)
    return results


def test_a_function_without_saved_tensors_runs_again():
    assert _functions_twice(aa, Function) == [[6.0, 6.0], True]


def test_a_function_without_saved_tensors_runs_again_in_pytorch(torch):
    assert _functions_twice(torch, torch.autograd.Function) == [[6.0, 6.0], True]


def test_release_keeps_metadata_and_frees_saved_arrays():
    x = aa.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    s = x.sum(0)
    m = x.max(1).values
    t = x.tanh()
    (s.sum() + m.sum() + t.sum()).backward()
    assert s.grad_fn._released and s.grad_fn._shape == (2, 2)  # metadata stays
    assert m.grad_fn._index is None and m.grad_fn._dims == (1,)  # the argmax indices are freed
    assert t.grad_fn._saved_out is None and t.grad_fn._saved_data is None
    with pytest.raises(RuntimeError) as info:
        m.grad_fn.backward(np.ones(2))
    assert str(info.value) == RELEASED_MESSAGE
