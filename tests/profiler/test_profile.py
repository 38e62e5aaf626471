"""profile(): sink installation and removal, nesting, lifecycle, forward recording (fake engine)."""

from __future__ import annotations

import threading

import pytest
from autograd_async.recording import forward_sink

from autograd_async.profiler import ProfilerError, profile

from .synthetic import backward_events, gpu_events


class FakeEngine:
    """The engine's sink contract: `trace_sink`, `set_trace_sink`, records from worker threads."""

    def __init__(self) -> None:
        self.trace_sink = None
        self.installs: list[object] = []

    def set_trace_sink(self, sink) -> None:
        self.trace_sink = sink
        self.installs.append(sink)

    def run(self, events) -> None:
        """Emit `events` from a worker thread, as the engine does, honouring gpu_timing."""
        sink = self.trace_sink

        def work() -> None:
            if sink is None:
                return
            for ev in events:
                if type(ev).__name__ == "GpuKernelSpan" and not sink.gpu_timing:
                    continue
                sink.record(ev)

        t = threading.Thread(target=work)
        t.start()
        t.join()


def test_installs_a_sink_and_removes_it_on_exit():
    engine = FakeEngine()
    with profile(engine=engine) as prof:
        assert engine.trace_sink is not None and engine.trace_sink.gpu_timing is True
        engine.run(backward_events(with_forward=False))
    assert engine.trace_sink is None
    assert prof.events == backward_events(with_forward=False)
    engine.run(backward_events())  # after exit nothing more is recorded
    assert len(prof.events) == len(backward_events(with_forward=False))
    assert prof.state == "closed" and prof.start_ns <= prof.end_ns


def test_gpu_timing_flag_reaches_the_engine():
    engine = FakeEngine()
    with profile(gpu_timing=False, engine=engine) as prof:
        assert engine.trace_sink.gpu_timing is False
        engine.run(gpu_events())
    assert all(type(ev).__name__ != "GpuKernelSpan" for ev in prof.events)


def test_sink_is_removed_when_the_block_raises():
    engine = FakeEngine()
    with pytest.raises(KeyError), profile(engine=engine):
        raise KeyError("boom")
    assert engine.trace_sink is None


def test_previous_sink_is_restored():
    engine = FakeEngine()
    outside = FakeSinkList()
    engine.trace_sink = outside
    with profile(engine=engine) as prof:
        engine.run(backward_events(with_forward=False))
    assert engine.trace_sink is outside
    # the sink that was there first keeps receiving while the profile is open
    assert outside.events == prof.events and prof.events


class FakeSinkList:
    gpu_timing = False

    def __init__(self) -> None:
        self.events: list[object] = []

    def record(self, ev) -> None:
        self.events.append(ev)


def test_nested_profiles_chain_to_the_outer_one():
    engine = FakeEngine()
    first, second = backward_events(with_forward=False), gpu_events()
    with profile(engine=engine, gpu_timing=False) as outer:
        engine.run(first)
        with profile(engine=engine, gpu_timing=True) as inner:
            # the engine times kernels because the inner profile asked
            assert engine.trace_sink.gpu_timing is True
            engine.run(second)
        assert engine.trace_sink is not None and engine.trace_sink.gpu_timing is False
    assert engine.trace_sink is None
    assert inner.events == second
    # the outer one did not ask for GPU spans and does not get them
    assert outer.events == first + [ev for ev in second if type(ev).__name__ == "NodeRun"]


def test_exiting_out_of_order_raises():
    engine = FakeEngine()
    a, b = profile(engine=engine), profile(engine=engine)
    a.__enter__()
    b.__enter__()
    with pytest.raises(ProfilerError, match="reverse order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)


def test_a_profile_is_entered_once():
    engine = FakeEngine()
    prof = profile(engine=engine)
    with prof:
        with pytest.raises(ProfilerError, match="open"):
            prof.__enter__()
    with pytest.raises(ProfilerError, match="closed"), prof:
        pass


async def test_async_with():
    engine = FakeEngine()
    async with profile(engine=engine) as prof:
        assert engine.trace_sink is not None
        engine.run(backward_events(with_forward=False))
    assert engine.trace_sink is None
    assert prof.events == backward_events(with_forward=False)


def test_record_forward_sets_and_resets_the_forward_sink():
    engine = FakeEngine()
    forward_ops = [ev for ev in backward_events() if type(ev).__name__ == "ForwardOp"]
    assert forward_sink.get() is None
    with profile(record_forward=True, engine=engine) as prof:
        sink = forward_sink.get()
        assert sink is not None
        for op in forward_ops:
            sink.record(op)
    assert forward_sink.get() is None
    assert prof.events == forward_ops
    with profile(record_forward=False, engine=engine):
        assert forward_sink.get() is None  # record_forward=False leaves it alone


def test_record_forward_does_not_leak_into_other_threads():
    engine = FakeEngine()
    seen = []
    with profile(record_forward=True, engine=engine):
        t = threading.Thread(target=lambda: seen.append(forward_sink.get()))
        t.start()
        t.join()
    assert seen == [None]


def test_export_and_key_averages_from_a_profile(tmp_path):
    engine = FakeEngine()
    with profile(engine=engine) as prof:
        engine.run(backward_events(with_forward=False))
    path = tmp_path / "p.json"
    prof.export_chrome_trace(path)
    assert path.stat().st_size > 0
    assert prof.key_averages().find("TanhBackward0").total_ns == 1000
    assert prof.summary().critical_path_us == pytest.approx(1.9)
    assert "closed" in repr(prof)
