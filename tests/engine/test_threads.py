"""Nodes run on their device's worker thread, each with its own event loop."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.engine import get_engine, uvloop_available

from .helpers import AsyncProbe, Probe, Recorder, engine_trace, worker_path


def _three_device_graph(recorder: Recorder, probe=Probe):
    x = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = probe.apply(x * 2.0, recorder, "cpu")
    b = probe.apply(a.to("sim:0") * 3.0, recorder, "sim:0")
    c = probe.apply(b.to("sim:1") + 1.0, recorder, "sim:1")
    return x, (c.to("cpu") * a).sum()


def test_each_device_has_its_own_thread_and_loop():
    recorder = Recorder()
    x, loss = _three_device_graph(recorder)
    loss.backward()
    by_device = {v.device: v for v in recorder.visits}
    assert set(by_device) == {"cpu", "sim:0", "sim:1"}
    threads = {v.thread for v in recorder.visits}
    loops = {id(v.loop) for v in recorder.visits}
    assert len(threads) == 3 and len(loops) == 3
    for dev, visit in by_device.items():
        assert visit.thread.name == f"autograd-async:{dev}"
        assert visit.thread is not threading.main_thread()
        assert visit.loop is not None
        assert visit.thread is get_engine().worker(aa.device(dev)).thread
        if uvloop_available():
            import uvloop

            assert isinstance(visit.loop, uvloop.Loop)


async def test_async_backward_runs_on_the_device_loop_not_the_callers():
    recorder = Recorder()
    x, loss = _three_device_graph(recorder, AsyncProbe)
    await loss.backward_async()
    caller_loop = asyncio.get_running_loop()
    assert {v.device for v in recorder.visits} == {"cpu", "sim:0", "sim:1"}
    for visit in recorder.visits:
        assert visit.loop is not caller_loop
        assert visit.thread.name == f"autograd-async:{visit.device}"
    xv = np.array([1.0, 2.0, 3.0])
    a = 2 * xv
    expected = 2 * (3 * a + 1) + 6 * a  # d/dx of ((3a + 1) * a) with a = 2x
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_root_on_an_accelerator_starts_on_that_worker():
    recorder = Recorder()
    x = aa.tensor([1.0, 2.0], requires_grad=True, device="sim:1")
    loss = Probe.apply(x * 2.0, recorder, "root").sum()
    loss.backward()
    assert recorder.visits[0].thread.name == "autograd-async:sim:1"
    np.testing.assert_allclose(x.grad.to("cpu").numpy(), [2.0, 2.0])


def test_a_node_never_runs_on_another_devices_thread():
    _, loss = _three_device_graph(Recorder())
    with engine_trace() as trace:
        loss.backward()
    assert len(trace.node_runs) > 6
    for node, thread_name in trace.node_runs:
        assert thread_name == f"autograd-async:{node.device}"


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_loop_kind_is_selectable(kind):
    if kind == "uvloop" and not uvloop_available():
        pytest.skip("uvloop not installed")
    recorder = Recorder()
    with aa.engine.Engine(loop=kind) as engine, worker_path(engine):
        x = aa.tensor([1.0], requires_grad=True)
        Probe.apply(x, recorder, "n").sum().backward()
        assert engine.loop_kind == kind
    loop = recorder.visits[0].loop
    assert ("uvloop" in type(loop).__module__) == (kind == "uvloop")
