"""Graph tasks started under `nodes_run_in_caller_context` run each node in a copy of the
starting context (the worker uses it to count a backward's allocations), with the engine's grad
mode; other tasks run in the device thread's own."""

from __future__ import annotations

import contextvars

import pytest

import autograd_async as aa
from autograd_async.graph_task import nodes_run_in_caller_context

marker: contextvars.ContextVar[str] = contextvars.ContextVar("test_caller_context", default="none")


def _recording(seen: list):
    class Record(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            seen.append((marker.get(), aa.is_grad_enabled()))
            return grad * 2

    return Record


@pytest.mark.parametrize("device", ["cpu", "sim:0"])
def test_nodes_see_the_callers_context_only_when_asked(device: str) -> None:
    seen: list = []
    record = _recording(seen)
    x = aa.ones(2, device=device, requires_grad=True)
    token = marker.set("caller")
    try:
        record.apply(x).sum().backward()
        with nodes_run_in_caller_context():
            record.apply(x).sum().backward()
            (g,) = aa.autograd.grad(record.apply(x).sum(), x, create_graph=True)
    finally:
        marker.reset(token)
    # A blocking backward may drive the worker from the caller's thread, in its context, so the
    # first pass may see either; the asked-for ones see the caller's, with the engine's grad mode.
    assert seen[1:] == [("caller", False), ("caller", True)]
    assert g.tolist() == [2.0, 2.0]


async def test_awaited_and_async_nodes_see_it_too() -> None:
    seen: list = []

    class AsyncRecord(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        async def backward(ctx, grad):
            seen.append(marker.get())
            return grad * 2

    x = aa.ones(2, requires_grad=True)
    marker.set("awaiting caller")
    with nodes_run_in_caller_context():
        await AsyncRecord.apply(_recording([]).apply(x)).sum().backward_async()
    assert seen == ["awaiting caller"]
    assert x.grad.tolist() == [4.0, 4.0]


def test_a_context_is_not_shared_between_threads_of_one_task() -> None:
    # Nodes of one task on two devices may run at once: each runs in its own copy.
    seen: list = []
    record = _recording(seen)
    x = aa.ones(2, requires_grad=True)
    marker.set("both")
    with nodes_run_in_caller_context():
        y = record.apply(x.to("sim:0")).to("cpu") + record.apply(x.to("sim:1")).to("cpu")
        y.sum().backward()
    assert [s for s, _ in seen] == ["both", "both"]
