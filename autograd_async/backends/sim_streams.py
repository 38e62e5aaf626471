"""Streams and events of `sim:N` devices: logical queues with counters and vector clocks.

Sim work runs at once on the thread that launches it, so nothing here ever waits. What the streams
keep is the order CUDA would guarantee: each stream counts the work launched on it, and its vector
clock says how far it has waited on every other stream (through events). The stream sanitizer
(`sanitizer.py`) compares those clocks with the stream that last wrote each array, so that in the
CUDA-faithful sim mode a missing wait is an error instead of a race that only shows on a GPU.

One `SimWorld` per process plays the part of the CUDA driver: every `SimStreams` instance (the sim
backend may make several) shares its streams, clocks and the host's clock.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from .sim_mode import sim_mode_state
from .stream_context import override_for, stream_overrides, with_override
from .streams_base import StreamBackend

if TYPE_CHECKING:
    from ..devices import Device


class SimStream:
    """A logical stream: its device, how much work was launched on it, and its vector clock."""

    __slots__ = ("device", "id", "priority", "counter", "clock", "label", "__weakref__")

    def __init__(self, device: Device | None, stream_id: int, priority: int, label: str) -> None:
        self.device = device
        self.id = stream_id
        self.priority = priority
        self.counter = 0
        # stream id -> the count of that stream's work this one is ordered after (own count too)
        self.clock: dict[int, int] = {}
        self.label = label

    def __repr__(self) -> str:
        return f"<SimStream {self.label}>"


class SimEvent:
    """A point in a stream: the recording stream's vector clock at that point."""

    __slots__ = ("enable_timing", "stream", "clock", "recorded_ns", "__weakref__")

    def __init__(self, enable_timing: bool) -> None:
        self.enable_timing = enable_timing
        self.stream: SimStream | None = None
        self.clock: dict[int, int] | None = None  # None until recorded
        self.recorded_ns = 0


def _merge(into: dict[int, int], other: dict[int, int]) -> None:
    for key, count in other.items():
        if into.get(key, 0) < count:
            into[key] = count


class SimWorld:
    """The process's simulated driver: all sim streams, their clocks and the host's clock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._ids = itertools.count(1)
        self._defaults: dict[Device, SimStream] = {}
        self._by_device: dict[Device, weakref.WeakSet] = {}
        self._side_counts: dict[Device, int] = {}
        # The host as a stream: its clock is what host synchronisations have made it wait for.
        self.host = SimStream(None, 0, 0, "the host")

    def default_stream(self, device: Device) -> SimStream:
        """The default stream of `device`, shared by every thread (CUDA's legacy stream)."""
        found = self._defaults.get(device)
        if found is None:
            with self.lock:
                found = self._defaults.get(device)
                if found is None:
                    found = self._new(device, 0, f"{device} default stream")
                    self._defaults[device] = found
        return found

    def new_stream(self, device: Device, priority: int) -> SimStream:
        """A new side stream of `device`."""
        with self.lock:
            number = self._side_counts.get(device, 0) + 1
            self._side_counts[device] = number
            return self._new(device, priority, f"{device} stream {number}")

    def _new(self, device: Device, priority: int, label: str) -> SimStream:
        stream = SimStream(device, next(self._ids), priority, label)
        self._by_device.setdefault(device, weakref.WeakSet()).add(stream)
        return stream

    def launch(self, stream: SimStream) -> int:
        """Count one more piece of work on `stream`; returns its position (lock held by caller)."""
        count = stream.counter + 1
        stream.counter = count
        stream.clock[stream.id] = count
        return count

    def record(self, event: SimEvent, stream: SimStream) -> None:
        """Snapshot `stream`'s clock into `event`."""
        with self.lock:
            event.stream = stream
            event.clock = dict(stream.clock)
            event.recorded_ns = time.perf_counter_ns()

    def wait(self, stream: SimStream, event: SimEvent) -> None:
        """Order later work on `stream` after `event` (an unrecorded event is no wait, as CUDA)."""
        if event.clock is None:
            return
        with self.lock:
            _merge(stream.clock, event.clock)

    def host_waits(self, clock: dict[int, int]) -> None:
        """The host has seen the work up to `clock` complete."""
        with self.lock:
            _merge(self.host.clock, clock)

    def streams_of(self, device: Device) -> list[SimStream]:
        """Every live stream of `device`."""
        with self.lock:
            return list(self._by_device.get(device, ()))


sim_world = SimWorld()


class SimStreams(StreamBackend):
    """The sim backend's streams and events (see module docstring); work never waits here."""

    def __init__(self) -> None:
        self.world = sim_world

    @property
    def trivial(self) -> bool:
        """True in the plain sim mode: nothing checks the order there, so the engine and copies
        skip events between devices (side streams a user makes still get their waits)."""
        return sim_mode_state.mode != "cuda"

    def default_stream(self, device: Device) -> SimStream:
        """The stream work on `device` goes to when no other is current."""
        return self.world.default_stream(device)

    def current_stream(self, device: Device) -> SimStream:
        """This context's current stream on `device`."""
        found = override_for(device)
        return found if found is not None else self.world.default_stream(device)

    def set_current_stream(self, device: Device, stream: Any) -> SimStream:
        """Make `stream` current on `device` in this context; returns the previous one."""
        previous = self.current_stream(device)
        default = self.world.default_stream(device)
        stream_overrides.set(with_override(device, None if stream is default else stream))
        return previous

    def new_stream(self, device: Device, priority: int = 0) -> SimStream:
        """A new stream on `device`."""
        return self.world.new_stream(device, priority)

    def new_event(self, enable_timing: bool = False) -> SimEvent:
        """A new, unrecorded event."""
        return SimEvent(enable_timing)

    def record(self, event: Any, stream: Any) -> None:
        """Record `event` at the current end of `stream`."""
        self.world.record(event, stream)

    def wait_event(self, stream: Any, event: Any) -> None:
        """Make later work on `stream` wait for `event`."""
        self.world.wait(stream, event)

    def query(self, event: Any) -> bool:
        """True: sim work is done once launched (the host learns so, as from cudaEventQuery)."""
        if event.clock is not None:
            self.world.host_waits(event.clock)
        return True

    def synchronize_event(self, event: Any) -> None:
        """The host waits for `event` (already complete; its clock is merged into the host's)."""
        if event.clock is not None:
            self.world.host_waits(event.clock)

    def synchronize_stream(self, stream: Any) -> None:
        """The host waits for all work on `stream`."""
        with self.world.lock:
            self.world.host_waits(dict(stream.clock))

    def synchronize_device(self, device: Device) -> None:
        """The host waits for all work on every stream of `device`."""
        for stream in self.world.streams_of(device):
            self.synchronize_stream(stream)

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Host time between the two records (sim kernels take no device time of their own)."""
        for which, event in (("start", start), ("end", end)):
            if event.clock is None:
                raise RuntimeError(f"elapsed_time: the {which} event has not been recorded")
            if not event.enable_timing:
                raise RuntimeError(
                    f"elapsed_time: the {which} event was created without enable_timing=True"
                )
        return (end.recorded_ns - start.recorded_ns) / 1e6

    def when_complete(self, event: Any, loop: Any, callback: Any) -> None:
        """Call `callback()` on `loop`; the host has then seen `event` complete."""
        self.synchronize_event(event)
        loop.call_soon_threadsafe(callback)
