"""Waking a worker ahead of its task: the wake overlaps preparation and never strands the task."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.engine import Engine, EngineClosedError

CPU = aa.device("cpu")


def _settle(worker, timeout: float = 5.0) -> None:
    """Wait until the worker's loop has run everything queued on it so far."""
    done = threading.Event()
    worker.loop.call_soon_threadsafe(done.set)
    assert done.wait(timeout)


def test_a_wake_spent_before_the_task_arrives_does_not_strand_it():
    with Engine() as engine:
        worker = engine.worker(CPU)
        engine.prewake(CPU)
        _settle(worker)  # the wake found an empty inbox and is spent
        assert not worker._wake_pending
        x = aa.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()  # must wake the worker again
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


async def test_backward_async_wakes_its_root_device_before_preparing(monkeypatch):
    from autograd_async.autograd import api

    async with Engine() as engine:
        order = []
        monkeypatch.setattr(engine, "prewake", lambda device: order.append(("wake", device)))
        real_prepare = api.prepare

        def prepare(*args, **kwargs):
            order.append(("prepare", None))
            return real_prepare(*args, **kwargs)

        monkeypatch.setattr(api, "prepare", prepare)
        x = aa.tensor([1.0], device="sim:1", requires_grad=True)
        await (x * 3.0).sum().backward_async()
        assert order == [("wake", aa.device("sim:1")), ("prepare", None)]
        assert x.grad.item() == 3.0


def test_prewake_from_the_workers_own_thread_sends_nothing():
    with Engine() as engine:
        worker = engine.worker(CPU)
        seen = []

        def on_worker():
            engine.prewake(CPU)  # a reentrant caller: already awake
            worker.prewake()
            seen.append(worker._wake_pending)

        worker.loop.call_soon_threadsafe(on_worker)
        _settle(worker)
        assert seen == [False]


def test_prewake_after_shutdown_is_silent_and_backward_reports_it():
    engine = Engine()
    engine.worker(CPU)
    engine.shutdown()
    engine.prewake(CPU)  # nothing to wake: the call that follows reports the closed engine
    with pytest.raises(EngineClosedError):
        engine.worker(CPU)
