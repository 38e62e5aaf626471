"""Deep graphs: backward, grad() and create_graph through a 100,000-op chain, without recursion
(the per-test timeout catches a pass that stalls); wide graphs; freeing a deep graph."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import autograd_async as aa

from .helpers import values

DEPTH = 100_000
FACTOR = 1.000001


def chain(depth: int = DEPTH, device: str = "cpu"):
    x = aa.tensor(1.0, dtype=aa.float64, device=device, requires_grad=True)
    y = x
    for _ in range(depth):
        y = y * FACTOR
    return x, y


@pytest.fixture(scope="module")
def low_recursion_limit():
    """Any recursion over the graph would fail far below the chain's depth."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def test_backward_through_a_100000_op_chain(low_recursion_limit):
    x, y = chain()
    y.backward()
    np.testing.assert_allclose(values(x.grad), FACTOR**DEPTH, rtol=1e-9)


def test_grad_through_a_100000_op_chain(low_recursion_limit):
    x, y = chain()
    (g,) = aa.autograd.grad(y, x, create_graph=False)
    np.testing.assert_allclose(values(g), FACTOR**DEPTH, rtol=1e-9)
    assert x.grad is None


def test_grad_of_a_middle_node_of_a_100000_op_chain(low_recursion_limit):
    x = aa.tensor(1.0, dtype=aa.float64, requires_grad=True)
    y = x
    middle = None
    for i in range(DEPTH):
        y = y * FACTOR
        if i == DEPTH // 2:
            middle = y
    (g,) = aa.autograd.grad(y, middle)
    np.testing.assert_allclose(values(g), FACTOR ** (DEPTH - DEPTH // 2 - 1), rtol=1e-9)


def test_create_graph_through_a_deep_chain(low_recursion_limit):
    x = aa.tensor(0.5, dtype=aa.float64, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y * FACTOR
    z = y * y
    (g,) = aa.autograd.grad(z, x, create_graph=True)  # 2 x F^(2n)
    (gg,) = aa.autograd.grad(g, x)  # 2 F^(2n)
    np.testing.assert_allclose(values(gg), 2 * FACTOR**40_000, rtol=1e-9)


async def test_backward_async_through_a_deep_chain_on_a_sim_device(low_recursion_limit):
    x, y = chain(50_000, device="sim:0")
    await y.backward_async()
    np.testing.assert_allclose(values(x.grad), FACTOR**50_000, rtol=1e-9)


def test_freeing_a_deep_graph_does_not_recurse(low_recursion_limit):
    x, y = chain()
    del y
    gc.collect()
    x, y = chain()
    y.backward()
    del x, y
    gc.collect()


def test_a_wide_graph():
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    parts = [x * float(i) for i in range(5000)]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    total.sum().backward()
    np.testing.assert_allclose(values(x.grad), [sum(range(5000))] * 2)


def test_a_leaf_used_many_times_accumulates_every_use():
    x = aa.tensor(1.0, dtype=aa.float64, requires_grad=True)
    y = x * 1.0
    for _ in range(10_000):
        y = y + x
    y.backward()
    np.testing.assert_allclose(values(x.grad), 10_001.0)
