"""Streams and events of `sim:N` devices: logical queues with counters and vector clocks.

Kernels run at once on the thread that launches them. What the streams keep is the order CUDA
would guarantee: each stream counts the work launched on it, and its vector clock says how far it
has waited on every other stream (through events). The stream sanitizer (`sanitizer.py`) compares
those clocks with the stream that last wrote each array, so that in the CUDA-faithful sim mode a
missing wait is an error instead of a race that only shows on a GPU.

Where CUDA bites the host, the sim is faithful too:

- copies into host memory that a stream makes without the host waiting (`copy_to_host_async`)
  complete later: each stream keeps a queue of such deferred work, drained in order when the host
  synchronises with it (an event, the stream, the device, a completion callback) or when work
  ordered after it is launched. Until then the destination holds poison (NaN, or all bits set), so
  a host read that skipped the wait sees wrong values;
- like CuPy, each thread has its own current stream per device (`use`), and the sanitizer checks
  every launch against it, not against the library's idea of the current stream;
- with `per_thread_default` (CuPy's CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1) each thread gets its
  own default stream, unordered with the others';
- the host's synchronisations are counted (`host_syncs`), so a test can assert a backward pass
  makes none.

One `SimWorld` per process plays the part of the CUDA driver: every `SimStreams` instance (the sim
backend may make several) shares its streams, clocks and the host's clock.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .sim_mode import sim_mode_state
from .stream_context import override_for, stream_overrides, with_override
from .streams_base import StreamBackend

if TYPE_CHECKING:
    from ..devices import Device


class SimStream:
    """A logical stream: its device, how much work was launched on it, and its vector clock."""

    __slots__ = ("device", "id", "priority", "counter", "clock", "label", "pending", "__weakref__")

    def __init__(self, device: Device | None, stream_id: int, priority: int, label: str) -> None:
        self.device = device
        self.id = stream_id
        self.priority = priority
        self.counter = 0
        # stream id -> the count of that stream's work this one is ordered after (own count too)
        self.clock: dict[int, int] = {}
        self.label = label
        self.pending: deque[DeferredWork] = deque()  # launched, not yet run

    def __repr__(self) -> str:
        return f"<SimStream {self.label}>"

    @property
    def launches_on(self) -> Device:
        """The device whose work this stream runs: every stream's but the host's."""
        device = self.device
        if device is None:
            raise ValueError(f"{self.label} is not a device's stream")
        return device


class DeferredWork(NamedTuple):
    """Work a stream runs later: its place in the stream and what it was ordered after."""

    position: int  # the stream's count of launched work when this was launched
    clock: dict[int, int]
    run: Any


class _LaunchStreams(threading.local):
    """A thread's current stream per sim device, as CuPy keeps one per thread; and its own
    default streams when default streams are per thread."""

    def __init__(self) -> None:
        self.current: dict[Device, SimStream] = {}
        self.defaults: dict[Device, SimStream] = {}


def poison(shape: tuple, dtype: Any) -> np.ndarray:
    """An array that work has not written yet: NaN for floating dtypes, all bits set otherwise."""
    out = np.empty(shape, dtype)
    if out.dtype.kind in "fc":
        out.fill(np.nan)
    else:
        out.view(np.uint8).fill(0xFF)
    return out


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
        self._by_id: weakref.WeakValueDictionary[int, SimStream] = weakref.WeakValueDictionary()
        self._threads = _LaunchStreams()
        self.deferred = 0  # pieces of deferred work not yet run, on all streams
        self.host_syncs = 0  # times the host blocked on sim work (see `host_sync`)
        # CuPy's CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1: every thread its own default stream
        # (read from the same variable; in the sim cuda mode only).
        flag = os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0").strip()
        self.per_thread_default = flag not in ("", "0") and sim_mode_state.mode == "cuda"

    def default_stream(self, device: Device) -> SimStream:
        """The default stream of `device`, shared by every thread (CUDA's legacy stream), or
        this thread's own with `per_thread_default`."""
        if self.per_thread_default:
            return self._thread_default(device)
        found = self._defaults.get(device)
        if found is None:
            with self.lock:
                found = self._defaults.get(device)
                if found is None:
                    found = self._new(device, 0, f"{device} default stream")
                    self._defaults[device] = found
        return found

    def _thread_default(self, device: Device) -> SimStream:
        defaults = self._threads.defaults
        found = defaults.get(device)
        if found is None:
            with self.lock:
                name = threading.current_thread().name
                found = self._new(device, 0, f"{device} per-thread default stream of {name}")
            defaults[device] = found
        return found

    def launch_stream(self, device: Device) -> SimStream:
        """The stream this thread launches `device` work on (CuPy's per-thread current stream)."""
        found = self._threads.current.get(device)
        return found if found is not None else self.default_stream(device)

    def use(self, stream: SimStream) -> None:
        """Make `stream` this thread's launch stream of its device (CuPy's `Stream.use`)."""
        self._threads.current[stream.launches_on] = stream

    def new_stream(self, device: Device, priority: int) -> SimStream:
        """A new side stream of `device`."""
        with self.lock:
            number = self._side_counts.get(device, 0) + 1
            self._side_counts[device] = number
            return self._new(device, priority, f"{device} stream {number}")

    def _new(self, device: Device, priority: int, label: str) -> SimStream:
        stream = SimStream(device, next(self._ids), priority, label)
        self._by_device.setdefault(device, weakref.WeakSet()).add(stream)
        self._by_id[stream.id] = stream
        return stream

    def launch(self, stream: SimStream) -> int:
        """Count one more piece of work on `stream`; returns its position (lock held by caller)."""
        count = stream.counter + 1
        stream.counter = count
        stream.clock[stream.id] = count
        return count

    def defer(self, stream: SimStream, run: Any) -> None:
        """Launch `run()` on `stream` to run later, after the work `stream` is ordered after."""
        with self.lock:
            count = self.launch(stream)
            stream.pending.append(DeferredWork(count, dict(stream.clock), run))
            self.deferred += 1

    def complete(self, clock: dict[int, int]) -> None:
        """Run the deferred work up to `clock` (the work it is ordered after first), in order."""
        if not self.deferred:
            return
        with self.lock:
            todo = list(clock.items())
            while todo:  # a work list, not recursion: chains of waits can be long
                sid, upto = todo[-1]
                stream = self._by_id.get(sid)
                pending = None if stream is None else stream.pending
                if not pending or pending[0].position > upto:
                    todo.pop()
                    continue
                first = pending[0]
                before = [
                    (other, at)
                    for other, at in first.clock.items()
                    if other != sid and self._waiting(other, at)
                ]
                if before:
                    todo.extend(before)
                    continue
                pending.popleft()
                self.deferred -= 1
                first.run()

    def _waiting(self, sid: int, upto: int) -> bool:
        stream = self._by_id.get(sid)
        return stream is not None and bool(stream.pending) and stream.pending[0].position <= upto

    def record(self, event: SimEvent, stream: SimStream) -> None:
        """Snapshot `stream`'s clock into `event`."""
        if event.stream is not None and event.stream.device != stream.device:
            # What CUDA does with an event made on one GPU and recorded on another's stream.
            raise RuntimeError(
                "CUDA error: cudaErrorInvalidResourceHandle: invalid resource handle "
                f"(an event of {event.stream.device} recorded on {stream.label})"
            )
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
        """The host has seen the work up to `clock` complete (it has run by then)."""
        with self.lock:
            self.complete(clock)
            _merge(self.host.clock, clock)

    def host_sync(self, clock: dict[int, int]) -> None:
        """The host blocks until the work up to `clock` completes (counted in `host_syncs`)."""
        with self.lock:
            self.host_syncs += 1
            self.host_waits(clock)

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
    def per_thread_default(self) -> bool:  # type: ignore[override]
        """True when each thread has its own default stream (`SimWorld.per_thread_default`)."""
        return self.world.per_thread_default

    def record_stream(self, array: Any, stream: Any) -> None:
        """The simulated allocator keeps `array`'s block until `stream`'s work is done."""
        from .sanitizer import sanitizer  # noqa: PLC0415 - the sanitizer builds on this module

        if sim_mode_state.mode == "cuda":
            sanitizer.record_stream(array, stream.device, stream)

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
        self.world.use(stream)  # and the thread's launch stream, as CudaStreams tells CuPy
        return previous

    def use(self, stream: SimStream) -> None:
        """Make `stream` this thread's launch stream of its device (as CuPy's current stream)."""
        self.world.use(stream)

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
        """True: sim work is done once asked about (its deferred work runs now, and the host
        learns so, as from cudaEventQuery); not a host synchronisation."""
        if event.clock is not None:
            self.world.host_waits(event.clock)
        return True

    def synchronize_event(self, event: Any) -> None:
        """The host waits for `event`: the work before it runs, its clock joins the host's."""
        if event.clock is not None:
            self.world.host_sync(event.clock)

    def synchronize_stream(self, stream: Any) -> None:
        """The host waits for all work on `stream`."""
        with self.world.lock:
            self.world.host_sync(dict(stream.clock))

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
        """Call `callback()` on `loop`; the host has then seen `event` complete (a callback, as
        CUDA's host functions: no thread blocks, so it is no host synchronisation)."""
        if event.clock is not None:
            self.world.host_waits(event.clock)
        loop.call_soon_threadsafe(callback)

    def copy_to_host_async(self, array: Any, stream: SimStream) -> Any:
        """A host array that `stream` fills from `array` later (a non-blocking copy into pinned
        memory); it holds poison until the host has waited for an event recorded after it."""
        from .sanitizer import sanitizer  # noqa: PLC0415 - the sanitizer builds on this module

        source = array if array.flags.c_contiguous else np.ascontiguousarray(array)
        out = poison(source.shape, source.dtype)
        device = stream.launches_on
        sanitizer.access(array, device, stream, False, "a copy to the host")
        if source is not array:
            sanitizer.access(source, device, stream, True, "a copy to the host")
        sanitizer.written_by(out, _host_device(), stream, "a copy to the host")
        self.world.defer(stream, lambda: np.copyto(out, source))
        return out


def _host_device() -> Device:
    from ..devices import CPU  # noqa: PLC0415 - devices imports the backends

    return CPU
