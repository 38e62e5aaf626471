"""Engines start on first use, shut down explicitly or at exit, and refuse work after shutdown."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.engine import Engine, EngineClosedError, get_engine
from autograd_async.engine.device_worker import START
from autograd_async.graph_task import GraphTask


def _backward_once():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    (x.to("sim:0") * 2.0).to("cpu").sum().backward()
    return x.grad.numpy()


def test_scoped_engine_serves_its_block_then_closes():
    with Engine() as engine:
        assert get_engine() is engine
        np.testing.assert_allclose(_backward_once(), [2.0, 2.0])
        workers = list(engine.workers().values())
        assert {str(w.device) for w in workers} >= {"cpu", "sim:0"}
        assert all(w.alive for w in workers)
    assert engine.state == "closed"
    assert all(not w.alive for w in workers)
    assert get_engine() is not engine
    with pytest.raises(EngineClosedError, match="shut down"):
        engine.worker(aa.device("cpu"))


async def test_async_context_manager():
    async with Engine() as engine:
        x = aa.tensor([3.0], requires_grad=True)
        await (x * x).sum().backward_async()
        assert x.grad.item() == 6.0
        assert get_engine() is engine
    assert engine.state == "closed"


def test_default_engine_restarts_after_shutdown():
    first = get_engine()
    _backward_once()
    aa.engine.shutdown()
    assert first.state == "closed"
    np.testing.assert_allclose(_backward_once(), [2.0, 2.0])
    assert get_engine() is not first and get_engine().state == "open"


def test_stats_count_nodes_and_busy_time():
    engine = get_engine()
    engine.reset_stats()
    x = aa.tensor([1.0], requires_grad=True)
    ((x * 2.0).tanh() * 3.0).sum().backward()
    stats = engine.stats()["cpu"]
    assert stats.nodes_run == 5  # Sum, Mul, Tanh, Mul, AccumulateGrad
    assert stats.busy_ns > 0 and stats.queue_depth == 0


def test_interpreter_exit_shuts_down_cleanly():
    code = (
        "import autograd_async as aa\n"
        "x = aa.tensor([1.0], requires_grad=True)\n"
        "(x.to('sim:0') * 2.0).to('cpu').sum().backward()\n"
        "print(x.grad.item())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2.0"
    assert done.stderr == ""


def test_unknown_loop_kind_is_refused():
    with pytest.raises(ValueError, match="loop kind must be one of"):
        Engine(loop="trio")


def test_a_stopped_worker_is_replaced_on_next_use():
    with Engine() as engine:
        x = aa.tensor([1.0], requires_grad=True)
        loss = (x.to("sim:1") * 2.0).to("cpu").sum()
        worker = engine.worker(aa.device("sim:1"))
        worker.loop.call_soon_threadsafe(worker.loop.stop)
        worker.thread.join(5)
        assert not worker.alive and worker.dead
        loss.backward()
        assert x.grad.item() == 2.0
        assert engine.worker(aa.device("sim:1")) is not worker
        # Work handed straight to the dead worker fails at once, naming its device.
        task = GraphTask((x * 3.0).sum().grad_fn, keep_graph=False, create_graph=False)
        worker.submit((START, task, []))
        assert isinstance(task.error, EngineClosedError)
        assert "the sim:1 worker is no longer running" in str(task.error)


def test_a_worker_that_stops_fails_the_tasks_it_holds():
    import threading
    import time

    from .helpers import AsyncProbe, Recorder

    with Engine() as engine:
        x = aa.tensor([1.0], requires_grad=True)
        # An async node awaiting on sim:1's loop when that loop stops.
        loss = AsyncProbe.apply(x.to("sim:1"), Recorder(), "slow", 30.0).to("cpu").sum()
        worker = engine.worker(aa.device("sim:1"))
        threading.Timer(0.2, worker.loop.call_soon_threadsafe, (worker.loop.stop,)).start()
        started = time.perf_counter()
        with pytest.raises(EngineClosedError, match="sim:1 worker stopped while graph task"):
            loss.backward()
        # Failed when the loop stopped (0.2 s), not when the node's 30 s sleep would have ended;
        # 15 s leaves a loaded machine all the room it needs.
        assert time.perf_counter() - started < 15.0
