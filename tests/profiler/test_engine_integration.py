"""Real backward passes under profile(): the trace must match what the engine did."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from autograd_async.backends.sim_mode import sim_mode
from autograd_async.engine.trace_events import CallerAwait, ForwardOp, Handoff, NodeRun
from autograd_async.profiler import load_trace, profile, summarize

from .synthetic import check_trace_format, enclosing, track_of

try:
    import autograd_async as aa
    from autograd_async.engine import get_engine

    aa.tensor  # noqa: B018 - the package API may not have landed yet
except (ImportError, AttributeError) as e:  # pragma: no cover - depends on the repo's state
    pytest.skip(f"engine or tensor API not available: {e}", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]


class _Loss:
    """An output and the ones it is backpropagated with (the explicit form of `.sum().backward()`,
    which keeps these tests off the reduction ops)."""

    def __init__(self, y) -> None:
        self.y = y

    def backward(self) -> None:
        self.y.backward(aa.ones_like(self.y))

    async def backward_async(self) -> None:
        await self.y.backward_async(aa.ones_like(self.y))


def _two_device_loss():
    x = aa.tensor([1.0, 2.0], dtype=aa.float64, requires_grad=True)
    return x, _Loss((x * 2).to("sim:0").tanh().to("cpu"))


def _three_device_loss():
    x = aa.tensor([0.5, -1.0, 2.0], requires_grad=True)
    a = (x * 3).to("sim:0").tanh()
    b = (x + 1).to("sim:1").tanh()
    return x, _Loss(a.to("cpu") * b.to("cpu"))


def _nodes_run(engine) -> Counter[str]:
    return Counter({dev: s.nodes_run for dev, s in engine.stats().items()})


def _check_against_engine(prof, before: Counter[str], after: Counter[str]) -> dict:
    """The trace is valid and agrees with the engine's counters and records."""
    trace = prof.chrome_trace()
    check_trace_format(trace)
    runs = [ev for ev in prof.events if type(ev) is NodeRun]
    handoffs = [ev for ev in prof.events if type(ev) is Handoff]
    slices = [ev for ev in trace["traceEvents"] if ev["ph"] == "X" and ev["cat"] == "backward"]
    assert len(slices) == len(runs)
    delta = after - before
    assert delta, "the engine ran no node"
    for device, n in delta.items():
        tid = track_of(trace, device)
        assert sum(1 for s in slices if s["tid"] == tid) == n, device
    starts = [ev for ev in trace["traceEvents"] if ev["ph"] == "s"]
    finishes = [ev for ev in trace["traceEvents"] if ev["ph"] == "f"]
    assert len(starts) == len(finishes) == len(handoffs) > 0
    assert trace["otherData"]["unmatched_handoffs"] == 0
    for s in starts:
        f = next(f for f in finishes if f["id"] == s["id"])
        src, dst = s["name"].split(" -> ")
        producer = [x for x in enclosing(trace, s) if x["cat"] == "backward"]
        consumer = [x for x in enclosing(trace, f) if x["cat"] == "backward"]
        assert len(producer) == 1 and producer[0]["args"]["device"] == src
        assert len(consumer) == 1 and consumer[0]["args"]["device"] == dst
    return trace


def test_sync_backward_across_devices():
    engine = get_engine()
    x, loss = _two_device_loss()
    before = _nodes_run(engine)
    with profile() as prof:
        assert engine.trace_sink is not None
        loss.backward()
    after = _nodes_run(engine)
    assert engine.trace_sink is None
    trace = _check_against_engine(prof, before, after)
    expected = 2 * (1 - np.tanh(2 * np.array([1.0, 2.0])) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), expected)
    names = {ev["args"]["name"] for ev in trace["traceEvents"] if ev["name"] == "thread_name"}
    # The CUDA-faithful sim mode adds sim:0's stream track (GPU spans from timing events).
    streams = {"sim:0 stream"} if sim_mode() == "cuda" else set()
    assert names == {"MainThread", "cpu", "sim:0"} | streams
    awaits = [ev for ev in prof.events if type(ev) is CallerAwait]
    assert [a.kind for a in awaits] == ["backward"]


def test_three_devices_and_summary_numbers(tmp_path):
    engine = get_engine()
    _, loss = _three_device_loss()
    before = _nodes_run(engine)
    with profile() as prof:
        loss.backward()
    trace = _check_against_engine(prof, before, _nodes_run(engine))
    summary = summarize(trace)
    for device in ("cpu", "sim:0", "sim:1"):
        track = summary.devices[device]
        durations = [
            ev["dur"]
            for ev in trace["traceEvents"]
            if ev["ph"] == "X" and ev["tid"] == track_of(trace, device)
        ]
        assert track.busy_us == pytest.approx(sum(durations))
        assert 0.0 <= track.busy_share <= 1.0
    assert 0 < summary.critical_path_us <= summary.wall_us + 1e-3
    assert {s.track for s in summary.critical_path} >= {"cpu"}
    path = tmp_path / "real.json"
    prof.export_chrome_trace(path)
    result = subprocess.run(
        [sys.executable, "-m", "autograd_async.profiler", "summary", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "sim:1" in result.stdout and "Critical path" in result.stdout
    assert load_trace(path)["traceEvents"]


def test_record_forward_puts_forward_ops_on_the_caller_track():
    with profile(record_forward=True) as prof:
        _, loss = _two_device_loss()
        loss.backward()
    forward = [ev for ev in prof.events if type(ev) is ForwardOp]
    assert [op.name for op in forward][:4] == ["mul", "to", "tanh", "to"]
    trace = prof.chrome_trace()
    check_trace_format(trace)
    caller = {
        ev["tid"]
        for ev in trace["traceEvents"]
        if ev["ph"] == "X" and ev["cat"] in ("forward", "caller")
    }
    assert len(caller) == 1  # forward ops and the await share the main thread's track
    with profile(record_forward=False) as quiet:
        _, loss = _two_device_loss()
        loss.backward()
    assert not [ev for ev in quiet.events if type(ev) is ForwardOp]


async def test_async_backward_under_async_with():
    engine = get_engine()
    x, loss = _two_device_loss()
    before = _nodes_run(engine)
    async with profile() as prof:
        await loss.backward_async()
    _check_against_engine(prof, before, _nodes_run(engine))
    awaits = [ev for ev in prof.events if type(ev) is CallerAwait]
    assert [a.kind for a in awaits] == ["backward_async"]
    assert x.grad is not None


async def test_gathered_async_backwards_get_a_slice_each():
    async with profile() as prof:
        losses = [_two_device_loss()[1] for _ in range(3)]
        await asyncio.gather(*(loss.backward_async() for loss in losses))
    trace = prof.chrome_trace()
    check_trace_format(trace)
    awaits = [ev for ev in trace["traceEvents"] if ev["ph"] == "X" and ev["cat"] == "caller"]
    assert len(awaits) == 3
    assert len({ev["args"]["task_id"] for ev in awaits}) == 3


def test_profile_off_records_nothing():
    engine = get_engine()
    with profile() as prof:
        pass
    _, loss = _two_device_loss()
    loss.backward()
    assert prof.events == [] and engine.trace_sink is None
