"""Awaiting backward leaves the caller's loop free; many backward passes run at once."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

import autograd_async as aa

from .helpers import Probe, Recorder


async def test_callers_loop_keeps_ticking_during_a_slow_backward():
    recorder = Recorder()
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for i in range(10):  # ten nodes of 50 ms each, on two devices
        dev = "cpu" if i % 2 == 0 else "sim:0"
        y = Probe.apply(y.to(dev), recorder, f"n{i}", 0.05)
    loss = y.to("cpu").sum()

    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    await loss.backward_async()
    elapsed = time.perf_counter() - started
    stop.set()
    await ticking
    assert elapsed >= 0.45, "the slow nodes really ran"
    gaps = np.diff(ticks)
    # Blocking the loop would show as one gap as long as the whole backward (>= 450 ms); the bound
    # leaves room for a busy shared machine's scheduling noise.
    assert len(ticks) > 20
    assert gaps.max() < 0.15, f"caller's loop stalled for {gaps.max() * 1000:.1f} ms"
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
