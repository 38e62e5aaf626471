"""record_function: user ranges as a context manager and a decorator, sync and async, shown in the
chrome trace, key_averages and the summary; and what profile() records by default."""

from __future__ import annotations

import asyncio
import threading

import pytest
from autograd_async.recording import forward_sink

import autograd_async as aa
from autograd_async.engine.trace_events import CallerAwait, ForwardOp
from autograd_async.profiler import (
    ProfilerError,
    UserRange,
    profile,
    record_function,
    summarize,
)
from autograd_async.profiler.record_function import range_sink

from .synthetic import check_trace_format, track_of


def ranges(prof: profile) -> list[UserRange]:
    """The user ranges a profile recorded, in order of their end."""
    return [ev for ev in prof.events if type(ev) is UserRange]


def model_step() -> None:
    x = aa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * 2).tanh().sum().backward()


def test_profile_records_forward_ops_by_default_as_pytorch_shows_cpu_ops():
    with profile() as prof:
        model_step()
    assert [op.name for op in prof.events if type(op) is ForwardOp] == ["mul", "tanh", "sum"]
    with profile(record_forward=False) as backward_only:
        model_step()
    assert not [op for op in backward_only.events if type(op) is ForwardOp]
    assert any(type(ev) is CallerAwait for ev in backward_only.events)


def test_a_with_block_is_one_range_around_the_ops_in_it():
    with profile() as prof:
        with record_function("step") as step:
            model_step()
    (recorded,) = ranges(prof)
    assert isinstance(step, record_function)
    assert recorded.name == "step" and recorded.thread_name == threading.current_thread().name
    forward = [ev for ev in prof.events if type(ev) is ForwardOp]
    assert all(recorded.start_ns <= op.start_ns and op.end_ns <= recorded.end_ns for op in forward)

    trace = prof.chrome_trace()
    check_trace_format(trace)
    (slice_,) = [ev for ev in trace["traceEvents"] if ev.get("cat") == "user_annotation"]
    assert slice_["name"] == "step" and slice_["ph"] == "X"
    # on the caller's track, with the forward ops it encloses (nested, so the same lane)
    assert slice_["tid"] == track_of(trace, threading.current_thread().name)
    ops = [ev for ev in trace["traceEvents"] if ev.get("cat") == "forward"]
    assert ops and all(ev["tid"] == slice_["tid"] for ev in ops)

    row = prof.key_averages().find("step")
    assert row.kind == "user" and row.count == 1
    assert row.total_ns == recorded.end_ns - recorded.start_ns
    summary = summarize(trace)
    assert summary.key_averages.find("step").kind == "user"
    assert "step" in summary.format()
    # the live table and the one read back from the trace agree, ranges included
    as_tuples = lambda t: sorted((r.name, r.device, r.kind, r.count) for r in t)  # noqa: E731
    assert as_tuples(prof.key_averages()) == as_tuples(summary.key_averages)


def test_the_decorator_makes_a_range_per_call_and_keeps_the_function():
    @record_function("helper")
    def helper(a, b=1):
        """Adds."""
        return a + b

    with profile() as prof:
        assert helper(1, b=2) == 3
        assert helper(5) == 6
    assert [r.name for r in ranges(prof)] == ["helper", "helper"]
    assert helper.__name__ == "helper" and helper.__doc__ == "Adds."


async def test_an_async_function_range_lasts_until_it_returns():
    @record_function("fetch")
    async def fetch(delay):
        await asyncio.sleep(delay)
        return delay

    assert asyncio.iscoroutinefunction(fetch)
    async with profile() as prof:
        assert await asyncio.gather(fetch(0.05), fetch(0.01)) == [0.05, 0.01]
    fetched = ranges(prof)
    assert len(fetched) == 2
    # each lasts at least its sleep: it covers the awaits, not just the call that made the coroutine
    assert sorted(r.end_ns - r.start_ns for r in fetched)[1] >= 50_000_000
    trace = prof.chrome_trace()
    check_trace_format(trace)  # the two ranges overlap on one thread: the exporter nests or splits
    assert len([ev for ev in trace["traceEvents"] if ev.get("cat") == "user_annotation"]) == 2


async def test_async_with_and_backward_async_inside_a_range():
    async with profile() as prof:
        async with record_function("async step"):
            x = aa.tensor([1.0, 2.0], requires_grad=True)
            await (x * x).sum().backward_async()
    (recorded,) = ranges(prof)
    (waited,) = [ev for ev in prof.events if type(ev) is CallerAwait]
    assert recorded.start_ns <= waited.start_ns and waited.end_ns <= recorded.end_ns
    names = {ev["name"] for ev in prof.chrome_trace()["traceEvents"] if ev.get("cat") == "caller"}
    assert names == {"backward_async (await)"}


def test_a_blocking_backward_is_labelled_as_blocking_not_as_an_await():
    with profile() as prof:
        model_step()
    names = {ev["name"] for ev in prof.chrome_trace()["traceEvents"] if ev.get("cat") == "caller"}
    assert names == {"backward (blocking)"}
    assert prof.key_averages().find("backward (blocking)").kind == "caller"


def test_ranges_outside_a_profile_record_nothing_and_args_are_kept():
    with record_function("nobody listens"):
        model_step()
    assert range_sink.get() is None
    with profile() as prof:
        with record_function("load", args="batch 3"):
            pass
    trace = prof.chrome_trace()
    (slice_,) = [ev for ev in trace["traceEvents"] if ev.get("cat") == "user_annotation"]
    assert slice_["args"]["args"] == "batch 3"


def test_nested_profiles_both_get_the_range():
    with profile() as outer:
        with profile(record_forward=False) as inner:
            with record_function("inner range"):
                model_step()
        with record_function("outer range"):
            pass
    assert [r.name for r in ranges(inner)] == ["inner range"]
    assert [r.name for r in ranges(outer)] == ["inner range", "outer range"]
    # the inner profile opted out of forward ops; the outer one still records them
    assert not [ev for ev in inner.events if type(ev) is ForwardOp]
    assert [ev.name for ev in outer.events if type(ev) is ForwardOp] == ["mul", "tanh", "sum"]


def test_exiting_out_of_order_leaves_no_sink_behind():
    a, b = profile(), profile()
    a.__enter__()
    b.__enter__()
    with pytest.raises(ProfilerError, match="reverse order"):
        a.__exit__(None, None, None)
    kept_by_a = len(a.events)
    with record_function("after a closed"):
        model_step()
    b.__exit__(None, None, None)
    # a keeps nothing once closed, though b, still open, passes its records on
    assert len(a.events) == kept_by_a
    assert [r.name for r in ranges(b)] == ["after a closed"]
    # b passes over a's sinks, closed, instead of putting them back: nothing keeps recording
    assert range_sink.get() is None and forward_sink.get() is None
    assert aa.engine.get_engine().trace_sink is None


async def test_exiting_in_a_task_started_inside_the_block_is_refused():
    prof = profile()
    prof.__enter__()

    async def exit_here():
        prof.__exit__(None, None, None)

    with pytest.raises(ProfilerError, match="context"):
        await asyncio.create_task(exit_here())
    with record_function("after the exit"):
        model_step()
    assert not ranges(prof) and not [ev for ev in prof.events if type(ev) is ForwardOp]
    assert aa.engine.get_engine().trace_sink is None


def test_a_name_is_required():
    with pytest.raises(TypeError, match="non-empty name"):
        record_function("")
    with pytest.raises(TypeError, match="non-empty name"):
        record_function(None)
