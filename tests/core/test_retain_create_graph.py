"""retain_graph and create_graph: freeing the graph, backward twice, higher-order derivatives."""

from __future__ import annotations

import numpy as np
import pytest
from autograd_async.ops.base import RELEASED_MESSAGE

import autograd_async as aa

from .helpers import values

SECOND_TIME = "Trying to backward through the graph a second time"


def test_backward_frees_the_graph_by_default():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert str(info.value) == RELEASED_MESSAGE
    assert str(info.value).startswith(SECOND_TIME)
    np.testing.assert_allclose(values(x.grad), [2.0, 4.0])  # the failed pass added nothing


def test_pytorch_frees_the_graph_by_default(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert str(info.value) == RELEASED_MESSAGE


def test_grad_frees_the_graph_too():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    aa.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        aa.autograd.grad(y, x)


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    np.testing.assert_allclose(values(x.grad), [4.0, 8.0])
    y.backward()  # the last one may free it
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        y.backward()


def test_a_shared_subgraph_is_freed_by_the_first_backward():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x.tanh()
    a, b = (h * 2).sum(), (h * 3).sum()
    a.backward()
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        b.backward()


def test_retain_graph_defaults_to_create_graph():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x**3).sum()
    (g,) = aa.autograd.grad(y, x, create_graph=True)  # retain_graph None -> True
    (g2,) = aa.autograd.grad(y, x, retain_graph=True)  # the graph is still there
    np.testing.assert_allclose(values(g), values(g2))
    y.backward(create_graph=True, retain_graph=False)  # explicit False wins
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        y.backward()


def test_accessing_saved_tensors_after_free_raises():
    class Square(aa.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 2 * t * g

    x = aa.tensor([3.0], requires_grad=True)
    y = Square.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        y.grad_fn.saved_tensors  # noqa: B018


# ---------------------------------------------------------------- create_graph
def cubic(lib):
    """f(x) = sum(x^3 * w + tanh(x)); first and second derivatives through grad(create_graph)."""
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
    f = (x * x * x * w + x.tanh()).sum()
    (g,) = lib.autograd.grad(f, x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    return values(g), values(gg)


def test_second_derivative_is_analytic():
    g, gg = cubic(aa)
    x = np.array([0.5, -1.0, 2.0])
    w = np.array([1.0, 2.0, 3.0])
    t = np.tanh(x)
    np.testing.assert_allclose(g, 3 * x**2 * w + 1 - t**2, rtol=1e-12)
    np.testing.assert_allclose(gg, 6 * x * w - 2 * t * (1 - t**2), rtol=1e-12)


def test_second_derivative_matches_pytorch(torch):
    for ours, theirs in zip(cubic(aa), cubic(torch), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def hvp(lib):
    """Hessian-vector product of f(x) = sum(tanh(A x)^2) + (x.x)^2 / 4."""
    rng = np.random.default_rng(0)
    a_np, x_np, v_np = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3)
    a = lib.tensor(a_np, dtype=lib.float64)
    x = lib.tensor(x_np, dtype=lib.float64, requires_grad=True)
    v = lib.tensor(v_np, dtype=lib.float64)
    f = ((a @ x).tanh() ** 2).sum() + (x @ x) * (x @ x) / 4
    (g,) = lib.autograd.grad(f, x, create_graph=True)
    (hv,) = lib.autograd.grad(g, x, grad_outputs=v)
    return values(hv), (a_np, x_np, v_np)


def test_hessian_vector_product_is_analytic():
    hv, (a, x, v) = hvp(aa)
    z = a @ x
    t = np.tanh(z)
    # d2/dz2 tanh(z)^2 = 2 (1 - t^2) (1 - 3 t^2); the quartic term's Hessian is |x|^2 I + 2 x x^T.
    hessian = a.T @ np.diag(2 * (1 - t**2) * (1 - 3 * t**2)) @ a
    hessian += (x @ x) * np.eye(3) + 2 * np.outer(x, x)
    np.testing.assert_allclose(hv, hessian @ v, rtol=1e-10)


def test_hessian_vector_product_matches_pytorch(torch):
    np.testing.assert_allclose(hvp(aa)[0], hvp(torch)[0], rtol=1e-12)


def test_backward_with_create_graph_makes_differentiable_leaf_gradients():
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    np.testing.assert_allclose(values(x.grad), [3.0, 12.0])
    (gg,) = aa.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(values(gg), [6.0, 12.0])


def test_without_create_graph_gradients_have_no_history():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    (g,) = aa.autograd.grad((x**3).sum(), x)
    assert not g.requires_grad and g.grad_fn is None
    (x**3).sum().backward()
    assert not x.grad.requires_grad


def test_third_derivative():
    x = aa.tensor([0.3, 1.5], dtype=aa.float64, requires_grad=True)
    y = (x**4).sum()
    (g1,) = aa.autograd.grad(y, x, create_graph=True)
    (g2,) = aa.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = aa.autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(values(g3), 24 * np.array([0.3, 1.5]), rtol=1e-12)


def test_double_backward_through_a_shared_graph_with_retain_graph():
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    y = (x * x).sum()
    (g,) = aa.autograd.grad(y, x, create_graph=True)
    (g * g).sum().backward()  # d/dx sum((2x)^2) = 8x
    np.testing.assert_allclose(values(x.grad), [8.0, 16.0])
