"""Backward called from inside a node's backward (checkpointing's pattern), sync and async."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import autograd_async as aa

from .helpers import AsyncProbe, Probe, Recorder, cpu_node_threads


class Nested(aa.autograd.Function):
    """Identity whose backward runs a whole nested backward `depth` levels deep (blocking)."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, depth: int, recorder: Recorder):
        ctx.depth, ctx.recorder = depth, recorder
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        if ctx.depth > 0:
            inner = aa.tensor([2.0], requires_grad=True)
            with aa.enable_grad():
                y = Nested.apply(inner * 3.0, ctx.depth - 1, ctx.recorder).sum()
            y.backward()
            assert inner.grad.item() == 6.0
        ctx.recorder.visits.append(ctx.depth)
        return g * 2.0, None, None


class NestedAsync(aa.autograd.Function):
    """Like Nested, but its backward is async and awaits the nested backward."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, depth: int, recorder: Recorder):
        ctx.depth, ctx.recorder = depth, recorder
        return x * 1.0

    @staticmethod
    async def backward(ctx: Any, g: aa.Tensor):
        if ctx.depth > 0:
            inner = aa.tensor([2.0], requires_grad=True)
            with aa.enable_grad():
                y = NestedAsync.apply(inner * 3.0, ctx.depth - 1, ctx.recorder).sum()
            await y.backward_async()
            assert inner.grad.item() == 6.0
        ctx.recorder.visits.append(ctx.depth)
        return g * 2.0, None, None


def test_blocking_reentrant_backward_1000_deep():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    Nested.apply(x, 1000, recorder).sum().backward()
    assert recorder.visits == list(range(1001))  # innermost finishes first
    assert x.grad.item() == 2.0


async def test_async_reentrant_backward_1000_deep():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    await NestedAsync.apply(x, 1000, recorder).sum().backward_async()
    assert recorder.visits == list(range(1001))
    assert x.grad.item() == 2.0


class RunsNested(aa.autograd.Function):
    """Its backward runs a nested graph of tagged Probe nodes."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, recorder: Recorder, use_async: bool):
        ctx.recorder, ctx.use_async = recorder, use_async
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        inner = aa.tensor([1.0], requires_grad=True)
        with aa.enable_grad():
            y = Probe.apply(Probe.apply(inner, ctx.recorder, "nested-1"), ctx.recorder, "nested-2")
            y = y.sum()
        y.backward()
        ctx.recorder.visits.append(None)
        return g, None, None


def test_nested_task_nodes_run_before_the_parents_remaining_ones():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    parent_low = Probe.apply(x * 1.0, recorder, "parent-after")  # lower sequence number
    reentrant = RunsNested.apply(x * 1.0, recorder, False)  # higher: runs first
    (parent_low + reentrant).sum().backward()
    tags = [v.tag if v is not None else "reentrant-done" for v in recorder.visits]
    assert tags == ["nested-2", "nested-1", "reentrant-done", "parent-after"]
    threads = {v.thread.name for v in recorder.visits if v is not None}
    assert len(threads) == 1 and threads <= cpu_node_threads()


class BlocksInsideAsync(aa.autograd.Function):
    """An async backward that calls blocking backward() on a graph holding an async node."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor):
        return x * 1.0

    @staticmethod
    async def backward(ctx: Any, g: aa.Tensor):
        inner = aa.tensor([1.0], requires_grad=True)
        with aa.enable_grad():
            y = AsyncProbe.apply(inner, Recorder(), "inner").sum()
        y.backward()
        return g


def test_blocking_backward_of_an_async_node_on_a_worker_is_refused_clearly():
    x = aa.tensor([1.0], requires_grad=True)
    try:
        BlocksInsideAsync.apply(x).sum().backward()
    except RuntimeError as exc:
        assert "use `await backward_async()`" in str(exc)
    else:
        raise AssertionError("expected a RuntimeError")
    # The engine still serves.
    y = aa.tensor([3.0], requires_grad=True)
    (y * y).sum().backward()
    assert y.grad.item() == 6.0


def _identity_whose_backward_runs(body: Any) -> Any:
    """A Function `x * 1` whose backward first calls `body(ctx)` (a nested backward pass)."""

    class Identity(aa.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: aa.Tensor):
            return x * 1.0

        @staticmethod
        def backward(ctx: Any, g: aa.Tensor):
            body(ctx)
            return g

    return Identity


def test_reentrant_across_devices():
    def nested(ctx: Any) -> None:
        inner = aa.tensor(np.ones(3), requires_grad=True)
        with aa.enable_grad():
            y = (inner.to("sim:1") * 4.0).to("sim:0").sum()
        y.backward()
        ctx.saw = threading.current_thread().name
        np.testing.assert_allclose(inner.grad.numpy(), 4.0)

    x = aa.tensor([1.0, 2.0], requires_grad=True, device="sim:0")
    _identity_whose_backward_runs(nested).apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.to("cpu").numpy(), [1.0, 1.0])


@pytest.mark.parametrize("outer_leaf", ["cpu", "sim:0", "sim:1"])
@pytest.mark.parametrize("inner_leaf", ["cpu", "sim:0", "sim:1"])
def test_blocking_backward_inside_a_cpu_node_with_handoffs_on_both_graphs(inner_leaf, outer_leaf):
    """A cpu node's backward runs a blocking backward whose graph hands gradients from a device
    to cpu, inside an outer graph that does the same: neither waits on the other's worker."""

    def nested(ctx: Any) -> None:
        with aa.enable_grad():
            a = aa.ones(3, device=inner_leaf, requires_grad=True)
            (a * 2.0).to("cpu").sum().backward()
        np.testing.assert_allclose(a.grad.to("cpu").numpy(), 2.0)

    x = aa.ones(3, device=outer_leaf, requires_grad=True)
    _identity_whose_backward_runs(nested).apply(x.to("cpu")).sum().backward()
    np.testing.assert_allclose(x.grad.to("cpu").numpy(), 1.0)
