"""Streams outside the sim cuda mode: the API works everywhere, and backward follows the forward's
stream in the plain sim mode too (nothing checks the order there; the semantics are the same)."""

from __future__ import annotations

import numpy as np

import autograd_async as aa


def test_backward_runs_on_the_forward_stream():
    x = aa.ones(8, device="sim:1", requires_grad=True)
    s = aa.Stream("sim:1")
    s.wait_stream(aa.current_stream("sim:1"))  # needed in the sim cuda mode, harmless elsewhere
    with aa.stream(s):
        h = x * 3
        loss = (h * h).sum()
    seen = []
    h.grad_fn.register_prehook(lambda grads: seen.append(aa.current_stream("sim:1")))
    aa.current_stream("sim:1").wait_stream(s)
    loss.backward()
    assert seen == [s]
    np.testing.assert_allclose(x.grad.cpu().numpy(), 18.0)


def test_nodes_recorded_on_the_default_stream_record_none():
    x = aa.ones(3, requires_grad=True)
    y = x * 2
    assert y.grad_fn._stream is None


def test_cpu_stream_api():
    s = aa.Stream("cpu")
    e = aa.Event(enable_timing=True)
    e.record(s)
    end = s.record_event(aa.Event(enable_timing=True))
    assert e.query() and end.query() and s.query()
    assert e.elapsed_time(end) >= 0.0
    aa.synchronize("cpu")
    assert aa.current_stream("cpu") == aa.default_stream("cpu") == s


def test_a_stream_is_its_devices():
    s = aa.Stream("sim:0")
    assert s.device == aa.device("sim:0")
    assert s != aa.default_stream("sim:0")
    assert "sim:0 stream" in repr(s)
