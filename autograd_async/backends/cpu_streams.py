"""Streams and events of the `cpu` device: the host runs work in order as it is launched.

There is one stream; events complete when recorded; nothing ever waits. The objects exist so that
device-generic code (`aa.current_stream(x.device).wait_stream(...)`) runs unchanged on the cpu.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .streams_base import StreamBackend

if TYPE_CHECKING:
    from ..devices import Device


class CpuStream:
    """The cpu's one stream: work launched on the host is done when the call returns."""

    __slots__ = ("label", "priority")

    def __init__(self, priority: int = 0) -> None:
        self.label = "cpu stream"
        self.priority = priority

    def __repr__(self) -> str:
        return "<CpuStream>"


class CpuEvent:
    """A cpu event: complete as soon as it is recorded; keeps the host time for `elapsed_ms`."""

    __slots__ = ("enable_timing", "recorded_ns")

    def __init__(self, enable_timing: bool) -> None:
        self.enable_timing = enable_timing
        self.recorded_ns: int | None = None


CPU_STREAM = CpuStream()


class CpuStreams(StreamBackend):
    """Trivial streams: in-order host execution needs no waits."""

    #: The engine skips events between cpu streams: there is nothing to order.
    trivial = True

    def __init__(self) -> None:
        self._stream = CPU_STREAM  # one for all instances: streams are compared by identity

    def default_stream(self, device: Device) -> CpuStream:
        """The cpu's stream."""
        return self._stream

    def current_stream(self, device: Device) -> CpuStream:
        """The cpu's stream (it is always current)."""
        return self._stream

    def set_current_stream(self, device: Device, stream: Any) -> CpuStream:
        """Nothing to change: every cpu stream runs in host order."""
        return self._stream

    def new_stream(self, device: Device, priority: int = 0) -> CpuStream:
        """The cpu's stream (a new one would behave the same)."""
        return self._stream

    def new_event(self, enable_timing: bool = False) -> CpuEvent:
        """A new, unrecorded event."""
        return CpuEvent(enable_timing)

    def record(self, event: Any, stream: Any) -> None:
        """Mark the time: everything launched before has already run."""
        event.recorded_ns = time.perf_counter_ns()

    def wait_event(self, stream: Any, event: Any) -> None:
        """No wait needed: the host is in order."""

    def query(self, event: Any) -> bool:
        """True: cpu work is done when launched."""
        return True

    def synchronize_event(self, event: Any) -> None:
        """Nothing to wait for."""

    def synchronize_stream(self, stream: Any) -> None:
        """Nothing to wait for."""

    def synchronize_device(self, device: Device) -> None:
        """Nothing to wait for."""

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Host time between the two records."""
        if start.recorded_ns is None or end.recorded_ns is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        if not (start.enable_timing and end.enable_timing):
            raise RuntimeError("elapsed_time: both events need enable_timing=True")
        return (end.recorded_ns - start.recorded_ns) / 1e6

    def when_complete(self, event: Any, loop: Any, callback: Any) -> None:
        """Already complete: schedule `callback` on `loop`."""
        loop.call_soon_threadsafe(callback)
