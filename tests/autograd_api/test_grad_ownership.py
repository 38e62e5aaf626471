"""Leaves' `.grad` owns its memory after backward, with and without create_graph: no aliasing of
another leaf's gradient or of the caller's gradient, and never a read-only broadcast view."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa

# PyTorch warns that backward(create_graph=True) makes a reference cycle.
pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")


def _aliasing_program(lib, create_graph: bool):
    """Values seen after in-place changes to the gradients of `x + y`."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.tensor([3.0, 4.0], requires_grad=True)
    g = lib.tensor([1.0, 1.0])
    (x + y).backward(g, create_graph=create_graph)
    same = x.grad is y.grad
    with lib.no_grad():
        x.grad.add_(10.0)
    return same, x.grad.tolist(), y.grad.tolist(), g.tolist()


def _broadcast_program(lib, create_graph: bool):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = lib.tensor(5.0, requires_grad=True)
    (x * 2 + b).sum().backward(create_graph=create_graph)
    with lib.no_grad():
        x.grad.add_(1.0)
        b.grad.mul_(2.0)
        x.grad[0] = 7.0
    return x.grad.tolist(), b.grad.tolist()


@pytest.mark.parametrize("create_graph", [False, True])
def test_sum_gradients_do_not_alias_like_pytorch(torch, create_graph):
    ours = _aliasing_program(aa, create_graph)
    assert ours == _aliasing_program(torch, create_graph)
    assert ours[0] is False and ours[3] == [1.0, 1.0]


@pytest.mark.parametrize("create_graph", [False, True])
def test_broadcast_gradient_is_writeable_like_pytorch(torch, create_graph):
    assert _broadcast_program(aa, create_graph) == _broadcast_program(torch, create_graph)


def test_expanded_gradient_of_a_sum_is_dense():
    x = aa.tensor(np.ones((3, 4)), requires_grad=True)
    x.sum().backward()
    data = x.grad._data
    assert data.flags.writeable and 0 not in data.strides
    x.grad.add_(1.0)
    assert x.grad.tolist() == [[2.0] * 4] * 3


def test_create_graph_gradient_stays_differentiable(torch):
    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (x * x).sum().backward(create_graph=True)
        first = x.grad
        (gx,) = lib.autograd.grad(first.sum(), x)
        return first.requires_grad, gx.tolist()

    assert program(aa) == program(torch)


@pytest.mark.parametrize("create_graph", [False, True])
def test_gradient_of_a_plain_sum_is_writeable_like_pytorch(torch, create_graph):
    def program(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x.sum().backward(create_graph=create_graph)
        with lib.no_grad():
            x.grad.add_(1.0)
            x.grad[0, 0] = 5.0
        return x.grad.tolist()

    assert program(aa) == program(torch) == [[5.0, 2.0], [2.0, 2.0]]
