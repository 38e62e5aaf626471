"""`profile`: a context manager that installs a trace sink on the engine and keeps what it records.

Recording costs one bound `list.append` per record on the engine's worker threads; everything else
(tracks, flows, tables) happens after the fact, at export time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from autograd_async.core.recording import forward_sink
from autograd_async.engine import get_engine
from autograd_async.engine.trace_events import (
    CallerAwait,
    ForwardOp,
    GpuKernelSpan,
    NodeRun,
    PendingGpuSpan,
    expand_records,
)
from autograd_async.profiler.chrome_trace import caller_slice_name, to_chrome_trace, write_trace
from autograd_async.profiler.key_averages import KeyAverages
from autograd_async.profiler.record_function import UserRange, range_sink
from autograd_async.profiler.summary import Summary, summarize


class ProfilerError(RuntimeError):
    """A profile was used out of its lifecycle (entered twice, exited out of nesting order)."""


def _discard(event: Any) -> None:
    """What a closed profile's sink does with a record that still reaches it."""


class _Sink:
    """What the engine calls: `record` is the event list's own `append`, the cheapest call."""

    __slots__ = ("record", "gpu_timing", "closed")
    outer = None  # nothing to pass records on to

    def __init__(self, events: list[Any], gpu_timing: bool) -> None:
        self.record = events.append
        self.gpu_timing = gpu_timing
        self.closed = False  # its profile has exited

    def close(self) -> None:
        """Keep nothing more (a profile entered later may still hand records on to this one)."""
        self.closed = True
        self.record = _discard


class _ChainedSink:
    """The sink of a profile nested in another: keeps its own copy and passes every record on."""

    __slots__ = ("_append", "outer", "_own_gpu", "_outer_gpu", "gpu_timing", "closed")

    def __init__(self, events: list[Any], outer: Any, gpu_timing: bool) -> None:
        self._append = events.append
        self.outer = outer
        self.closed = False
        self._own_gpu = gpu_timing
        self._outer_gpu = bool(getattr(outer, "gpu_timing", False))
        # The engine times kernels if either profile asked; each keeps spans only if it asked.
        self.gpu_timing = gpu_timing or self._outer_gpu

    def record(self, event: Any) -> None:
        """Append `event` here and hand it to the enclosing profile's sink."""
        is_gpu = type(event) is GpuKernelSpan or type(event) is PendingGpuSpan
        if self._own_gpu or not is_gpu:
            self._append(event)
        if self._outer_gpu or not is_gpu:
            self.outer.record(event)

    def close(self) -> None:
        """Keep nothing more, but still pass records on to the enclosing profile."""
        self.closed = True
        self._append = _discard


def _make_sink(events: list[Any], outer: Any, gpu_timing: bool) -> _Sink | _ChainedSink:
    return _Sink(events, gpu_timing) if outer is None else _ChainedSink(events, outer, gpu_timing)


def _open_outer(sink: Any) -> Any:
    """What to put back when `sink`'s profile exits: its outer sink, skipping closed profiles'.

    A profile that exited out of order could not take its sink out (a later one sat on top);
    the later one, exiting, passes over it, so that a closed profile's sink is never reinstalled.
    """
    outer = sink.outer
    while getattr(outer, "closed", False):
        outer = outer.outer
    return outer


class profile:  # noqa: N801 - lower case like torch.profiler.profile, which users know
    """Record the engine's backward passes, forward ops and user ranges while the block runs.

    Usable as `with profile() as prof:` or `async with profile() as prof:`. Recording is
    process-wide: every backward on every thread while the block is open lands in `prof.events`.
    Profiles nest: an inner profile records into its own list and passes every record on to the
    enclosing one, and on exit puts the enclosing sink back; exiting profiles in any order other
    than the reverse of entry raises `ProfilerError`. A profile is entered once.

    Forward ops and `record_function` ranges are recorded when the entering thread or task (or a
    task it starts) runs them: their sinks are ContextVars. `record_forward=False` leaves forward
    ops out (ranges are still recorded). `gpu_timing=True` lets workers of devices with streams
    (cuda, and sim in the CUDA-faithful mode) bracket each node with two timing events on its
    stream; nothing waits for them while recording: the spans (`<device> stream` tracks) are
    resolved when `events` or the trace are read.
    """

    def __init__(
        self, record_forward: bool = True, gpu_timing: bool = True, *, engine: Any = None
    ) -> None:
        self.record_forward = record_forward
        self.gpu_timing = gpu_timing
        self._engine = engine
        self._events: list[Any] = []
        self._state = "unopened"
        self._sink: Any = None
        # (ContextVar, the sink this profile set in it, the token of that set)
        self._context_sinks: list[tuple[Any, Any, Any]] = []
        self.start_ns: int | None = None
        self.end_ns: int | None = None

    @property
    def events(self) -> list[Any]:
        """The records (NodeRun, Handoff, CallerAwait, ForwardOp, UserRange, GpuKernelSpan)."""
        return expand_records(self._events)

    @property
    def state(self) -> str:
        """ "unopened", "open" or "closed"."""
        return self._state

    def __enter__(self) -> profile:
        if self._state != "unopened":
            raise ProfilerError(f"this profile is {self._state}; create a new profile() per block")
        if self._engine is None:
            self._engine = get_engine()
        self._sink = _make_sink(self._events, self._engine.trace_sink, self.gpu_timing)
        self._engine.set_trace_sink(self._sink)
        # Same list: user ranges, forward ops and backward records interleave in time order.
        variables = (range_sink, forward_sink) if self.record_forward else (range_sink,)
        self._context_sinks = []
        for var in variables:
            sink = _make_sink(self._events, var.get(), False)
            self._context_sinks.append((var, sink, var.set(sink)))
        self._state = "open"
        self.start_ns = time.perf_counter_ns()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state != "open":
            raise ProfilerError(f"exit of a profile that is {self._state}")
        self.end_ns = time.perf_counter_ns()
        self._state = "closed"
        problems = []
        self._sink.close()
        if self._engine.trace_sink is self._sink:
            self._engine.set_trace_sink(_open_outer(self._sink))
        else:
            # Restoring now would cut off the profile entered after this one; leave it in place.
            problems.append("profiles must exit in the reverse order of entry (strictly nested)")
        in_context = True
        for var, sink, token in self._context_sinks:
            sink.close()
            if var.get() is not sink:  # another thread, or a profile entered later still open
                in_context = False
                continue
            try:
                var.reset(token)  # raises in a copy of the entering context (a task it started)
            except ValueError:
                in_context = False
            var.set(_open_outer(sink))
        if not in_context and not problems:
            problems.append("a profile must exit in the context (thread or task) that entered it")
        if problems and exc is None:
            raise ProfilerError("; ".join(problems))

    async def __aenter__(self) -> profile:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def chrome_trace(self) -> dict[str, Any]:
        """The recorded events as a Chrome Trace Event dict."""
        return to_chrome_trace(list(self.events))

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the recorded events to `path` as Chrome Trace JSON (gzipped if it ends in .gz)."""
        write_trace(self.chrome_trace(), path)

    def key_averages(self) -> KeyAverages:
        """Count, total, mean, min and max time per (op name, device); `print()` it for a table."""
        return key_averages(self.events)

    def summary(self) -> Summary:
        """Key averages, busy share, idle gaps and critical path of the recorded events."""
        return summarize(self.chrome_trace())

    def __repr__(self) -> str:
        return f"<profile {self._state}, {len(self._events)} events>"


def key_averages(events: Iterable[Any]) -> KeyAverages:
    """Aggregate raw trace records into a `KeyAverages` table."""
    return KeyAverages.from_samples(_samples(events))


def _samples(events: Iterable[Any]) -> Iterable[tuple[str, str, str, int]]:
    # Labels match summary._samples, so a live profile and its exported trace give the same table.
    for ev in list(events):
        kind = type(ev)
        if kind is NodeRun:
            yield ev.name, ev.device, "backward", ev.end_ns - ev.start_ns
        elif kind is ForwardOp:
            yield ev.name, ev.thread_name, "forward", ev.end_ns - ev.start_ns
        elif kind is GpuKernelSpan:
            yield ev.name, ev.device, "gpu", ev.end_ns - ev.start_ns
        elif kind is CallerAwait:
            yield caller_slice_name(ev.kind), ev.thread_name, "caller", ev.end_ns - ev.start_ns
        elif kind is UserRange:
            yield ev.name, ev.thread_name, "user", ev.end_ns - ev.start_ns
