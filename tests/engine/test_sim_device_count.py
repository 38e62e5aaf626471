"""Lowering the sim device count never strands a tensor, a worker or a graph on a dropped device."""

from __future__ import annotations

import gc

import pytest

import autograd_async as aa
from autograd_async.engine import Engine


@pytest.fixture
def restore_sim_count():
    """Put the configured sim device count back after the test; start with no default worker."""
    aa.engine.shutdown()  # the default engine's sim workers would (rightly) hold their devices
    configured = aa.sim_device_count()
    yield
    aa.set_sim_device_count(configured)


def test_a_live_sim_tensor_keeps_its_device(restore_sim_count):
    with Engine():
        x = aa.tensor([1.0, 2.0], requires_grad=True)
        on_sim = x.to("sim:1") * 2.0
        with pytest.raises(aa.DeviceError, match=r"sim:1 is still in use by \d+ live Tensor"):
            aa.set_sim_device_count(1)
        assert aa.sim_device_count() == 2
        # Refused, so the tensor's forward and backward keep working.
        (on_sim * 3.0).to("cpu").sum().backward()
        assert x.grad.tolist() == [6.0, 6.0]
    del on_sim, x
    gc.collect()
    aa.set_sim_device_count(1)
    assert aa.sim_device_count() == 1


def test_a_running_worker_keeps_its_device(restore_sim_count):
    with Engine() as engine:
        x = aa.tensor([1.0], requires_grad=True)
        (x.to("sim:1") * 2.0).to("cpu").sum().backward()
        del x
        assert "sim:1" in engine.workers()
        with pytest.raises(aa.DeviceError, match="worker thread autograd-async:sim:1"):
            aa.set_sim_device_count(1)
        # sim:0 is below the new count: it stays usable whatever holds it.
        assert aa.sim_device_count() == 2
    aa.set_sim_device_count(1)  # the engine has shut down: its workers let go
    assert aa.sim_device_count() == 1


def test_a_graph_left_on_a_dropped_device_fails_naming_it(restore_sim_count):
    with Engine():
        x = aa.tensor([1.0], requires_grad=True)
        # The sim:1 intermediates are freed; only the graph's nodes remember sim:1.
        loss = (x.to("sim:1") * 2.0).to("cpu").sum()
        gc.collect()
        aa.set_sim_device_count(1)
        with pytest.raises(aa.DeviceError, match="cannot start the sim:1 worker: device sim:1"):
            loss.backward()
        aa.set_sim_device_count(2)
        loss2 = (x.to("sim:1") * 2.0).to("cpu").sum()
        loss2.backward()
        assert x.grad.tolist() == [2.0]
