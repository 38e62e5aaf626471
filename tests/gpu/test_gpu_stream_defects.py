"""The stream defects of issue 28 on real GPUs (the faithful sim checks them everywhere else):
sums on the consumer's stream, host copies with a dtype, ordered copies between GPUs,
record_stream, per-thread default streams refused, events bound to their GPU."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa


def _side(device: str = "cuda:0") -> aa.Stream:
    s = aa.Stream(device)
    s.wait_stream(aa.current_stream(device))
    return s


def _host(t: aa.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_a_side_stream_node_with_two_gradients():
    x = aa.ones(1 << 20, device="cuda:0", requires_grad=True)
    s = _side()
    with aa.stream(s):
        h = x * 3
        loss = (h * 2 + h * 5).sum()
    aa.current_stream("cuda:0").wait_stream(s)
    loss.backward()
    np.testing.assert_array_equal(_host(x.grad), 21.0)


def test_a_gradient_back_to_the_host_with_a_dtype():
    x = aa.tensor(np.linspace(-1, 1, 1 << 16), requires_grad=True)
    (x.to("cuda:0", aa.float32) * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0)


def test_record_stream_keeps_the_values_read_on_another_stream():
    n = 1 << 22
    x = aa.ones(n, device="cuda:0")
    s = _side()
    with aa.stream(s):
        y = x * 2
    x.record_stream(s)
    del x
    z = aa.zeros(n, device="cuda:0")
    aa.current_stream("cuda:0").wait_stream(s)
    assert float((y + z).sum().item()) == 2.0 * n


def test_an_event_stays_on_its_gpu(two_gpus):
    e = aa.Event()
    e.record(aa.current_stream("cuda:0"))
    with pytest.raises(RuntimeError, match="Event device index 0 does not match"):
        e.record(aa.current_stream("cuda:1"))


def test_a_non_contiguous_copy_between_gpus(two_gpus):
    values = np.arange(1 << 20, dtype=np.float32).reshape(-1, 8)
    y = (aa.tensor(values, device="cuda:0") * 1)[:, 1:6].to("cuda:1")
    np.testing.assert_array_equal(_host(y), values[:, 1:6])


def test_clip_grad_norm_over_two_gpus(two_gpus):
    a = aa.ones(1 << 16, device="cuda:0", requires_grad=True)
    b = aa.ones(1 << 15, device="cuda:1", requires_grad=True)
    (a * 3).sum().backward()
    (b * 4).sum().backward()
    total = float(aa.nn.utils.clip_grad_norm_([a, b], 1.0).item())
    np.testing.assert_allclose(total, np.sqrt(9.0 * (1 << 16) + 16.0 * (1 << 15)), rtol=1e-5)
