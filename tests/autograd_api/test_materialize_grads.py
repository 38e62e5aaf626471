"""`autograd.grad(..., materialize_grads=True)`: unused inputs get zeros, as in PyTorch."""

from __future__ import annotations

import pytest

import autograd_async as aa


def _program(lib, create_graph: bool):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    unused = lib.tensor([[3.0], [4.0]], requires_grad=True)
    out = (x * x).sum()
    gx, gu = lib.autograd.grad(out, (x, unused), create_graph=create_graph, materialize_grads=True)
    return gx.tolist(), gu.tolist(), tuple(gu.shape), gu.requires_grad, gu.dtype == unused.dtype


@pytest.mark.parametrize("create_graph", [False, True])
def test_unused_inputs_get_zeros_like_pytorch(torch, create_graph):
    assert _program(aa, create_graph) == _program(torch, create_graph)


def test_allow_unused_false_contradicts_materialize(torch):
    for lib in (aa, torch):
        x = lib.tensor([1.0], requires_grad=True)
        y = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
            lib.autograd.grad((x * 2).sum(), (x, y), materialize_grads=True, allow_unused=False)


def test_allow_unused_defaults_to_false_without_materialize(torch):
    for lib in (aa, torch):
        x = lib.tensor([1.0], requires_grad=True)
        y = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            lib.autograd.grad((x * 2).sum(), (x, y))


async def test_grad_async_materializes():
    x = aa.tensor([1.0], requires_grad=True)
    y = aa.tensor([5.0, 6.0], requires_grad=True)
    gx, gy = await aa.autograd.grad_async((x * 3).sum(), (x, y), materialize_grads=True)
    assert gx.tolist() == [3.0] and gy.tolist() == [0.0, 0.0]
