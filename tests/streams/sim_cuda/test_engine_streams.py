"""PyTorch's stream semantics of backward passes, checked by the sim mode's stream sanitizer."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.backends import sim_streams
from autograd_async.engine import stream_sync


def _ones(n: int, device: str = "sim:0") -> aa.Tensor:
    return aa.ones(n, device=device, requires_grad=True)


def _side(device: str = "sim:0") -> aa.Stream:
    """A side stream that has waited for the default stream (so it may read its tensors)."""
    s = aa.Stream(device)
    s.wait_stream(aa.current_stream(device))
    return s


def _streams_seen(tensor: aa.Tensor, seen: list) -> None:
    """Note the current stream each time the tensor's node runs its backward."""
    device = tensor.device
    tensor.grad_fn.register_prehook(lambda grads: seen.append(aa.current_stream(device)))


def test_backward_of_a_side_stream_forward_runs_on_that_stream():
    x = _ones(100)
    s = _side()
    with aa.stream(s):
        h = x * 2
        loss = h.tanh().sum()
    seen: list = []
    _streams_seen(h, seen)
    aa.current_stream("sim:0").wait_stream(s)
    loss.backward(aa.ones_like(loss))
    assert seen == [s]
    np.testing.assert_allclose((x.grad * 1).cpu().numpy(), 2 * (1 - np.tanh(2.0) ** 2), rtol=1e-5)


def test_backward_called_inside_the_side_stream_block():
    x = _ones(10)
    s = _side()
    with aa.stream(s):
        loss = (x * x).sum()
        loss.backward()
        assert float((x.grad * 1).sum().item()) == 20.0


# ---------------------------------------------------------------- wait sites
def _start_and_finish() -> aa.Tensor:
    """Root on a side stream whose gradient the default stream makes; .grad read on default."""
    x = _ones(100)
    s = _side()
    with aa.stream(s):
        loss = (x * 3).sum()
    aa.current_stream("sim:0").wait_stream(s)
    loss.backward(aa.ones_like(loss))  # the gradient is made on the default stream
    return x.grad * 1  # read on the default stream: needs the caller to wait for s


def _same_device() -> aa.Tensor:
    """A node on the default stream fed by one on a side stream of the same device."""
    x = _ones(100)
    h = x * 2
    s = _side()
    with aa.stream(s):
        loss = h.tanh().sum()
    aa.current_stream("sim:0").wait_stream(s)
    loss.backward()
    return x.grad * 1


def _cross_device() -> aa.Tensor:
    """A side-stream consumer on sim:0 of a gradient copied over from sim:1."""
    x = _ones(100)
    s = _side()
    with aa.stream(s):
        h = x * 2
    aa.current_stream("sim:0").wait_stream(s)
    y = h.to("sim:1")
    loss = (y * y).sum()
    loss.backward()
    return x.grad * 1


def _host() -> aa.Tensor:
    """A cpu leaf whose gradient comes back from sim:0 through a non-blocking copy."""
    x = aa.ones(100, requires_grad=True)
    loss = (x.to("sim:0") * 5).sum()
    loss.backward()
    return x.grad * 1


SCENARIOS = {
    "start": (_start_and_finish, 3.0),
    "finish": (_start_and_finish, 3.0),
    "same_device": (_same_device, 2 * (1 - np.tanh(2.0) ** 2)),
    "cross_device": (_cross_device, 8.0),
    "host": (_host, 5.0),
}


def test_every_wait_site_has_a_scenario():
    assert set(SCENARIOS) == set(stream_sync.WAIT_SITES) | {"host"}


@pytest.mark.parametrize("site", sorted(SCENARIOS))
def test_each_scenario_is_race_free_with_every_wait(site):
    scenario, expected = SCENARIOS[site]
    np.testing.assert_allclose(scenario().cpu().numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("site", sorted(SCENARIOS))
def test_removing_one_wait_makes_its_scenario_race(site, monkeypatch):
    """The mutation check: each wait the engine makes is needed, and the sanitizer sees it go."""
    if site == "host":
        # The gradient copied to the host is handed over when the copy's completion callback
        # runs; without the host observing the copy's event there, the consumer reads it early.
        monkeypatch.setattr(
            sim_streams.SimStreams,
            "when_complete",
            lambda self, event, loop, callback: loop.call_soon_threadsafe(callback),
        )
    else:
        real = stream_sync.order

        def order_without_site(where, *args):
            if where != site:
                real(where, *args)

        monkeypatch.setattr(stream_sync, "order", order_without_site)
    scenario, _ = SCENARIOS[site]
    with pytest.raises(aa.StreamRaceError):
        scenario()


# ------------------------------------------------------------- more graphs
def test_graph_over_two_sim_devices_and_the_cpu():
    x = _ones(50)
    y = x * 2
    z = y.to("sim:1")
    s1 = _side("sim:1")
    with aa.stream(s1):
        w = (z * z).tanh()
    aa.current_stream("sim:1").wait_stream(s1)
    loss = w.to("cpu").sum() + (y.to("cpu") * 3).sum()
    loss.backward()
    expected = (1 - np.tanh(4.0) ** 2) * 2 * 2 * 2 + 6  # d tanh(z^2) dz * dz/dx + 6
    np.testing.assert_allclose((x.grad * 1).cpu().numpy(), expected, rtol=1e-4)


def test_gradients_accumulate_across_passes_on_a_side_stream():
    x = _ones(20)
    s = _side()
    for _ in range(3):
        s.wait_stream(aa.current_stream("sim:0"))
        with aa.stream(s):
            loss = (x * x + x).sum()
        aa.current_stream("sim:0").wait_stream(s)
        loss.backward()
    np.testing.assert_allclose((x.grad * 1).cpu().numpy(), 9.0)


def test_a_leaf_used_on_two_streams_sums_its_gradients():
    x = _ones(20)
    s = _side()
    a = x * 2  # default stream
    with aa.stream(s):
        b = x * 3
    aa.current_stream("sim:0").wait_stream(s)
    (a + b).sum().backward()
    np.testing.assert_allclose((x.grad * 1).cpu().numpy(), 5.0)


async def test_backward_async_on_a_side_stream():
    x = _ones(30)
    s = _side()
    with aa.stream(s):
        loss = (x * 4).sum()
    aa.current_stream("sim:0").wait_stream(s)
    await loss.backward_async()
    np.testing.assert_allclose((x.grad * 1).cpu().numpy(), 4.0)


def test_create_graph_on_a_side_stream_then_a_second_backward():
    x = _ones(10)
    s = _side()
    with aa.stream(s):
        loss = (x * x * x).sum()
        (g,) = aa.autograd.grad(loss, x, create_graph=True)
        g.sum().backward()
    aa.current_stream("sim:0").wait_stream(s)
    np.testing.assert_allclose((x.grad * 1).cpu().numpy(), 6.0)  # d/dx of 3x^2 at 1


def test_grad_returns_gradients_safe_to_read_on_the_callers_stream():
    x = _ones(10)
    s = _side()
    with aa.stream(s):
        loss = (x * 7).sum()
    aa.current_stream("sim:0").wait_stream(s)
    (g,) = aa.autograd.grad(loss, x)
    np.testing.assert_allclose((g * 1).cpu().numpy(), 7.0)
