"""Backward over cuda:0 with the cpu and sim devices, async, double and reentrant backward, several
GPUs, side streams, serialization and the profiler's GPU spans. Values checked against NumPy."""

from __future__ import annotations

import io

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.engine.trace_events import GpuKernelSpan


def _host(t: aa.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_graph_over_cuda_cpu_and_sim():
    x = aa.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = (x.to("cuda:0") * 3).tanh()
    k = (h.to("sim:0") * h.to("sim:0")).to("cpu")
    loss = k.sum() + h.sum().to("cpu")
    loss.backward()
    t = np.tanh(3 * np.array([0.5, -1.0, 2.0]))
    expected = (2 * t + 1) * (1 - t**2) * 3
    np.testing.assert_allclose(_host(x.grad), expected, rtol=1e-5)


async def test_backward_async_on_cuda():
    x = aa.ones(1000, device="cuda:0", requires_grad=True)
    loss = (x * x * 2).sum()
    await loss.backward_async()
    np.testing.assert_allclose(_host(x.grad), 4.0)


def test_create_graph_on_cuda():
    x = aa.tensor([1.0, 2.0, 3.0], device="cuda:0", requires_grad=True)
    (g,) = aa.autograd.grad((x**3).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(_host(x.grad), 6 * np.array([1.0, 2.0, 3.0]), rtol=1e-6)


def test_reentrant_backward_on_cuda():
    x = aa.ones(64, device="cuda:0", requires_grad=True)
    y = aa.utils.checkpoint.checkpoint(lambda t: (t * 2).tanh(), x, use_reentrant=True)
    y.sum().backward()
    np.testing.assert_allclose(_host(x.grad), 2 * (1 - np.tanh(2.0) ** 2), rtol=1e-5)


def test_backward_on_a_side_stream():
    x = aa.ones(4096, device="cuda:0", requires_grad=True)
    s = aa.Stream("cuda:0")
    s.wait_stream(aa.current_stream("cuda:0"))
    with aa.stream(s):
        loss = (x * x * 5).sum()
    aa.current_stream("cuda:0").wait_stream(s)
    loss.backward()
    np.testing.assert_allclose(_host(x.grad), 10.0)


def test_events_time_work_on_a_stream():
    start, end = aa.Event(enable_timing=True), aa.Event(enable_timing=True)
    start.record(aa.current_stream("cuda:0"))
    a = aa.ones((512, 512), device="cuda:0")
    (a @ a).sum()
    end.record(aa.current_stream("cuda:0"))
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    aa.synchronize("cuda:0")


def test_gradient_to_the_host_through_a_pinned_copy():
    x = aa.ones(10_000, requires_grad=True)
    (x.to("cuda:0") * 7).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 7.0)


def test_two_gpus_and_back(two_gpus):
    x = aa.tensor(np.arange(12.0).reshape(3, 4), device="cuda:0", requires_grad=True)
    y = x[:, :2].to("cuda:1") * 2  # a non-contiguous view across devices
    z = (y * y).sum().to("cuda:0") + x.sum()
    z.backward()
    expected = np.ones((3, 4))
    expected[:, :2] += 8 * np.arange(12.0).reshape(3, 4)[:, :2]
    np.testing.assert_allclose(_host(x.grad), expected)


def test_two_gpus_side_stream_on_the_second(two_gpus):
    x = aa.ones(100, device="cuda:0", requires_grad=True)
    y = x.to("cuda:1")
    s = aa.Stream("cuda:1")
    s.wait_stream(aa.current_stream("cuda:1"))
    with aa.stream(s):
        loss = (y * 3).sum()
    aa.current_stream("cuda:1").wait_stream(s)
    loss.backward()
    np.testing.assert_allclose(_host(x.grad), 3.0)


def test_cuda_tensors_round_trip_through_save_and_load():
    state = {"w": aa.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda:0")}
    buffer = io.BytesIO()
    aa.save(state, buffer)
    buffer.seek(0)
    loaded = aa.load(buffer)
    assert str(loaded["w"].device) == "cuda:0"
    np.testing.assert_allclose(_host(loaded["w"]), [[1.0, 2.0], [3.0, 4.0]])


def test_profiler_gpu_spans_from_events():
    x = aa.ones(1 << 16, device="cuda:0", requires_grad=True)
    with aa.profiler.profile() as prof:
        ((x * 2).tanh() * x).sum().backward()
    spans = [ev for ev in prof.events if type(ev) is GpuKernelSpan]
    assert spans and {span.device for span in spans} == {"cuda:0"}
    names = {
        ev["args"]["name"]
        for ev in prof.chrome_trace()["traceEvents"]
        if ev.get("ph") == "M" and ev.get("name") == "thread_name"
    }
    assert "cuda:0 stream" in names


@pytest.mark.parametrize("steps", [3])
def test_mlp_steps_agree_with_the_cpu(steps):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    data = rng.standard_normal((32, 8)).astype(np.float32)
    target = rng.integers(0, 16, 32)
    losses = {}
    for device in ("cpu", "cuda:0"):
        weight = aa.tensor(w, device=device, requires_grad=True)
        opt = aa.optim.SGD([weight], lr=0.1)
        x, y = aa.tensor(data, device=device), aa.tensor(target, device=device)
        for _ in range(steps):
            opt.zero_grad()
            loss = aa.nn.functional.cross_entropy(x @ weight.t(), y)
            loss.backward()
            opt.step()
        losses[device] = float(loss.item())
    assert losses["cpu"] == pytest.approx(losses["cuda:0"], rel=1e-4)
