"""Gradients cross devices through the workers and are accumulated on the consumer's thread."""

from __future__ import annotations

import numpy as np

import autograd_async as aa

from .helpers import engine_trace


def _model(x: aa.Tensor, devices: tuple[str, str, str]):
    a, b, c = devices
    h0 = (x * 1.5).tanh()  # on cpu
    h1 = h0.to(a) * 2.0
    h2 = (h1.to(b) + 0.5).tanh()
    fan_in = h2 * h1.to(b)  # fan-out of h1 to two consumers on two devices
    out = fan_in.to(c) + h0.to(c) * h1.to(c)
    return out.sum()


def test_cross_device_gradients_equal_single_device():
    data = np.linspace(-1, 1, 6)
    x_multi = aa.tensor(data, requires_grad=True)
    _model(x_multi, ("sim:0", "sim:1", "cpu")).backward()
    x_single = aa.tensor(data, requires_grad=True)
    _model(x_single, ("cpu", "cpu", "cpu")).backward()
    np.testing.assert_allclose(x_multi.grad.numpy(), x_single.grad.numpy(), rtol=1e-12)


def test_gradient_for_a_node_on_b_is_accumulated_on_bs_thread():
    x = aa.tensor([0.3, 0.7], requires_grad=True)
    on_b = x.to("sim:1")
    # Two producers on other devices feed the same node on sim:1.
    loss = (on_b * 2.0).to("sim:0").sum().to("cpu") + (on_b * 3.0).to("cpu").sum()
    with engine_trace() as trace:
        loss.backward()
    # A gradient from another device is deposited by the receiving worker as it takes the
    # handoff; one from the same device by the producer's routing, on the thread that ran it.
    on_sim1 = [thread for dev, thread in trace.handoffs if dev == "sim:1"]
    assert len(on_sim1) >= 2
    assert set(on_sim1) == {"autograd-async:sim:1"}
    for dev, thread in trace.handoffs:
        assert thread == f"autograd-async:{dev}"
    assert trace.node_runs
    for node, thread in trace.node_runs:
        assert thread == f"autograd-async:{node.device}"
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_handoff_counts_in_stats():
    engine = aa.engine.get_engine()
    before = engine.stats()
    x = aa.tensor([1.0], requires_grad=True)
    (x.to("sim:0").to("sim:1").to("cpu") * 2.0).sum().backward()
    after = engine.stats()

    def delta(dev, field):
        old = before.get(dev)
        return getattr(after[dev], field) - (getattr(old, field) if old else 0)

    assert delta("cpu", "handoffs_out") >= 1 and delta("sim:0", "handoffs_in") >= 1
    assert delta("sim:1", "handoffs_in") >= 1 and delta("cpu", "handoffs_in") >= 1
    assert all(s.queue_depth == 0 for s in after.values())
