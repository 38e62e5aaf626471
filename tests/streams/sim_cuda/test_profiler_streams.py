"""GPU spans from events recorded per node, resolved when the trace is read (sim cuda mode)."""

from __future__ import annotations

import autograd_async as aa
from autograd_async.engine.trace_events import GpuKernelSpan, PendingGpuSpan


def _backward_on_sim() -> None:
    x = aa.ones(64, device="sim:0", requires_grad=True)
    ((x * 2).tanh() * x).sum().backward()


def test_spans_are_pending_until_the_trace_is_read():
    with aa.profiler.profile() as prof:
        _backward_on_sim()
    raw = list(prof._events)
    pending = [ev for ev in raw if type(ev) is PendingGpuSpan]
    assert pending, "each sim node run should bracket its kernels with two timing events"
    spans = [ev for ev in prof.events if type(ev) is GpuKernelSpan]
    assert len(spans) == len(pending)
    assert {span.device for span in spans} == {"sim:0"}
    assert all(span.end_ns >= span.start_ns for span in spans)
    assert "TanhBackward0" in {span.name for span in spans}


def test_the_trace_has_a_sim_stream_track():
    with aa.profiler.profile() as prof:
        _backward_on_sim()
    trace = prof.chrome_trace()
    names = {
        ev["args"]["name"]
        for ev in trace["traceEvents"]
        if ev.get("ph") == "M" and ev.get("name") == "thread_name"
    }
    assert "sim:0 stream" in names
    gpu = [ev for ev in trace["traceEvents"] if ev.get("cat") == "gpu"]
    assert gpu


def test_no_spans_without_gpu_timing():
    with aa.profiler.profile(gpu_timing=False) as prof:
        _backward_on_sim()
    assert not [ev for ev in prof.events if type(ev) is GpuKernelSpan]
