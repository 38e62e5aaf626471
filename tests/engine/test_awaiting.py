"""Awaiting backward leaves the caller's loop free; many backward passes run at once."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

import autograd_async as aa

from .helpers import Probe, Recorder


class NeedsCallersLoop(aa.autograd.Function):
    """Identity whose backward, on a worker thread, waits for a callback on the caller's loop."""

    @staticmethod
    def forward(ctx, x, loop, answered: list):
        ctx.loop, ctx.answered = loop, answered
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        ran = threading.Event()
        ctx.loop.call_soon_threadsafe(ran.set)
        # Only a running caller's loop sets it; a loop blocked by the backward never would.
        ctx.answered.append(ran.wait(LOOP_BLOCKED_SECONDS))
        return g, None, None


# Far beyond any scheduling delay: a callback not run by then means the loop is blocked.
LOOP_BLOCKED_SECONDS = 20.0


async def test_callers_loop_keeps_running_during_a_slow_backward():
    recorder = Recorder()
    loop = asyncio.get_running_loop()
    answered: list[bool] = []
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for i in range(10):  # ten nodes of 50 ms each, on two devices
        dev = "cpu" if i % 2 == 0 else "sim:0"
        y = Probe.apply(y.to(dev), recorder, f"n{i}", 0.05)
        if i % 3 == 0:  # and nodes that need the caller's loop to run while the backward runs
            y = NeedsCallersLoop.apply(y, loop, answered)
    loss = y.to("cpu").sum()

    ticks = 0
    stop = asyncio.Event()

    async def ticker():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    await loss.backward_async()
    elapsed = time.perf_counter() - started
    ticks_during_backward = ticks
    stop.set()
    await ticking
    assert elapsed >= 0.45, "the slow nodes really ran"  # ten sleeps of 50 ms, one after another
    assert answered == [True] * 4, "the caller's loop ran callbacks while the backward ran"
    assert ticks_during_backward > 1, "other coroutines on the caller's loop kept running"
    assert [v.tag for v in recorder.visits] == [f"n{i}" for i in reversed(range(10))]
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def _graph(seed: int, shared: aa.Tensor | None):
    rng = np.random.default_rng(seed)
    w = aa.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    h = (w * 2.0).tanh()
    if shared is not None:
        h = h * shared
    return w, (h.to("sim:0") * 3.0).to("sim:1").tanh().to("cpu").sum()


async def test_200_concurrent_backward_async_equal_sequential_runs():
    shared = aa.tensor(np.linspace(0.1, 1.2, 12).reshape(4, 3), requires_grad=True)
    # Sequential reference.
    expected_private = []
    for i in range(200):
        w, loss = _graph(i, shared if i % 2 else None)
        loss.backward()
        expected_private.append(w.grad.numpy().copy())
    expected_shared = shared.grad.numpy().copy()
    shared.grad = None

    graphs = [_graph(i, shared if i % 2 else None) for i in range(200)]
    await asyncio.gather(*(loss.backward_async() for _, loss in graphs))
    for (w, _), want in zip(graphs, expected_private, strict=True):
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(shared.grad.numpy(), expected_shared, rtol=1e-10)


def test_eight_threads_calling_backward_equal_sequential_runs():
    shared = aa.tensor(np.linspace(0.1, 1.2, 12).reshape(4, 3), requires_grad=True)
    for i in range(64):
        _graph(i, shared)[1].backward()
    expected = shared.grad.numpy().copy()
    shared.grad = None
    errors: list[BaseException] = []

    def caller(offset: int):
        try:
            for i in range(offset, 64, 8):
                _graph(i, shared)[1].backward()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    np.testing.assert_allclose(shared.grad.numpy(), expected, rtol=1e-10)


async def test_grad_async_returns_gradients_without_touching_grad():
    x = aa.tensor([0.5, -1.0], requires_grad=True)
    y = (x.to("sim:0") * x.to("sim:0")).to("cpu").sum()
    (gx,) = await aa.autograd.grad_async(y, [x])
    np.testing.assert_allclose(gx.numpy(), [1.0, -2.0])
    assert x.grad is None
