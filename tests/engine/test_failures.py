"""Errors fail only their graph task; cancellation and timeouts abandon it cleanly."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.engine import get_engine

from .helpers import AsyncProbe, Boom, Probe, Recorder


class CustomError(Exception):
    pass


def _works_afterwards():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    (x.to("sim:0") * 3.0).to("cpu").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("device", ["cpu", "sim:1"])
def test_node_error_reaches_caller_with_type_node_and_device(device):
    x = aa.tensor([1.0], requires_grad=True)
    loss = Boom.apply(x.to(device) * 2.0, CustomError("bad gradient")).to("cpu").sum()
    with pytest.raises(CustomError, match="bad gradient") as info:
        loss.backward()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "BoomBackward" in notes and f"on {device}" in notes
    if device == "cpu" and aa.sim_mode() != "cuda":  # run inline: the note names this thread
        assert "calling thread MainThread (run inline for the cpu worker)" in notes
    else:
        assert f"worker thread autograd-async:{device}" in notes
    assert info.value.node_name == "BoomBackward" and info.value.device == device
    _works_afterwards()


async def test_async_error_and_other_tasks_keep_running():
    good = [aa.tensor([float(i)], requires_grad=True) for i in range(20)]
    bad = aa.tensor([1.0], requires_grad=True)
    losses = [(g.to("sim:0") * g.to("sim:0")).to("cpu").sum() for g in good]
    failing = Boom.apply(bad.to("sim:0"), ValueError("nope")).to("cpu").sum()
    results = await asyncio.gather(
        failing.backward_async(),
        *(loss.backward_async() for loss in losses),
        return_exceptions=True,
    )
    assert isinstance(results[0], ValueError)
    assert all(r is None for r in results[1:])
    for i, g in enumerate(good):
        assert g.grad.item() == 2.0 * i
    _works_afterwards()


def test_error_drops_the_tasks_queued_nodes():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    after = Probe.apply(x * 1.0, recorder, "never")  # lower sequence number: would run later
    failing = Boom.apply(x * 1.0, RuntimeError("first"))
    with pytest.raises(RuntimeError, match="first"):
        (after + failing).sum().backward()
    assert recorder.visits == []
    assert all(s.queue_depth == 0 for s in get_engine().stats().values())


async def test_cancelling_the_await_abandons_the_graph_task():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    y = x
    for i in range(5):
        y = AsyncProbe.apply(y.to("sim:0"), recorder, f"slow{i}", 0.5)
    loss = y.to("cpu").sum()
    pending = asyncio.create_task(loss.backward_async())
    # Cancel once the first node has run (the second is then awaiting its 0.5 s), whatever
    # the machine's load did to the timing before that.
    deadline = time.monotonic() + 20
    while not recorder.visits and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    await asyncio.sleep(1.2)  # two more nodes' time: had the task gone on, they would show
    assert recorder.tags() == ["slow4"], "nodes after the cancellation must not run"
    assert x.grad is None
    # The graph task and its buffers are gone: nothing holds the loss's graph alive.
    ref = weakref.ref(loss.grad_fn)
    del loss, y, pending
    gc.collect()
    assert ref() is None
    _works_afterwards()


async def test_asyncio_timeout_around_the_await():
    x = aa.tensor([1.0], requires_grad=True)
    loss = AsyncProbe.apply(x.to("sim:1"), Recorder(), "slow", 5.0).to("cpu").sum()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await loss.backward_async()
    _works_afterwards()


def test_error_in_hook_fails_the_task_and_engine_serves():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0

    def bad_hook(grad):
        raise KeyError("hook failed")

    y.register_hook(bad_hook)
    with pytest.raises(KeyError, match="hook failed"):
        y.sum().backward()
    _works_afterwards()


def test_a_failure_while_routing_gradients_fails_the_task_not_the_worker(monkeypatch):
    from autograd_async import graph_task

    original = graph_task.add_on_stream
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    target = x * 2.0
    # `target`'s node takes two gradients: ExpBackward0's first (the later node runs first),
    # then TanhBackward0's, whose routing sums them into its buffer and fails.
    loss = (target.tanh() * 3.0).sum() + target.exp().sum()
    broken = target.grad_fn

    def add_on_stream(node, held, grad, checks_streams):
        if node is broken:
            raise MemoryError("could not buffer the gradient")
        return original(node, held, grad, checks_streams)

    monkeypatch.setattr(graph_task, "add_on_stream", add_on_stream)
    with pytest.raises(MemoryError, match="could not buffer") as info:
        loss.backward()
    assert any("TanhBackward0" in note for note in info.value.__notes__)
    monkeypatch.setattr(graph_task, "add_on_stream", original)
    _works_afterwards()
