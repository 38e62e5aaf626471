"""Streams and events with PyTorch's device-generic API: `aa.Stream`, `aa.Event`, `aa.stream`.

A stream is an ordered queue of work on one device; an event marks a point in a stream that other
streams, or the host, can wait for. Work launched in `with aa.stream(s):` goes to `s`, and so does
the backward of ops recorded there (the engine runs each node on its forward's stream). Ordering
between streams is explicit, as in CUDA: `s.wait_stream(other)` or `s.wait_event(e)`; the host
waits only in `synchronize()`, `Event.synchronize()` or when it reads a value.

On `cpu` every stream runs in host order; on `cuda:N` they are CuPy streams and events; on `sim:N`
they are logical streams whose missing waits the CUDA-faithful sim mode reports as
`StreamRaceError` (see `backends/sanitizer.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .backends.sanitizer import StreamRaceError, sanitizer
from .backends.sanitizer import enabled as sanitizer_enabled
from .backends.sanitizer import watches as sanitizer_watches
from .backends.stream_context import override_for, stream_overrides, with_override
from .backends.streams_base import StreamBackend
from .devices import Device, backend_for, check_available, cuda_is_available, move_array

__all__ = [
    "Event",
    "Stream",
    "StreamRaceError",
    "copy_between",
    "current_stream",
    "default_stream",
    "stream",
    "streams_for",
    "synchronize",
]


def streams_for(device: Device) -> StreamBackend:
    """The stream backend of `device`'s type (its backend's, from the registry)."""
    return backend_for(device).streams


def _device(device: Any) -> Device:
    if device is None:
        return Device("cuda:0" if cuda_is_available() else "sim:0")
    if isinstance(device, Stream):
        return device.device
    return Device(device)


def stream_handle(device: Device) -> Any:
    """The backend handle of `device`'s current stream in this context."""
    found = override_for(device)
    return found if found is not None else streams_for(device).default_stream(device)


class Stream:
    """An ordered queue of work on one device (PyTorch's `torch.Stream`)."""

    __slots__ = ("device", "_handle", "_backend")

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        dev = _device(device)
        check_available(dev)
        self.device = dev
        self._backend = streams_for(dev)
        self._handle = self._backend.new_stream(dev, priority)

    @classmethod
    def _of(cls, device: Device, handle: Any) -> Stream:
        made = object.__new__(cls)
        made.device = device
        made._backend = streams_for(device)
        made._handle = handle
        return made

    @property
    def priority(self) -> int:
        """The priority the stream was made with."""
        return getattr(self._handle, "priority", 0)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for `event` (the host does not wait)."""
        handle = event._handle_for(self.device)
        if handle is not None:
            self._backend.wait_event(self._handle, handle)

    def wait_stream(self, other: Stream) -> None:
        """Make later work on this stream wait for all work queued on `other` so far."""
        if other._handle is self._handle:
            return
        self.wait_event(other.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one when None) at the current end of this stream."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        """True when all work queued on this stream has completed."""
        return self.record_event().query()

    def synchronize(self) -> None:
        """Block the host until all work queued on this stream has completed."""
        self._backend.synchronize_stream(self._handle)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other._handle is self._handle

    def __hash__(self) -> int:
        return id(self._handle)

    def __repr__(self) -> str:
        return f"<autograd_async.Stream {getattr(self._handle, 'label', self.device)}>"


class Event:
    """A point in a stream that streams or the host can wait for (PyTorch's `torch.Event`)."""

    __slots__ = ("enable_timing", "device", "_handle")

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self.device: Device | None = None  # set by the first record
        self._handle: Any = None

    def _handle_for(self, device: Device) -> Any:
        """The backend event, or None when never recorded (waiting on it is then no wait)."""
        recorded_on = self.device  # set with the handle, by the first record
        if self._handle is None or recorded_on is None:
            return None
        if recorded_on.type != device.type:
            raise RuntimeError(
                f"an event recorded on {recorded_on} cannot order work on {device}: streams of "
                "different device types share no events"
            )
        return self._handle

    def record(self, stream: Stream | None = None) -> None:
        """Record the event at the current end of `stream` (the current stream when None).

        As PyTorch: an event, once recorded, belongs to that device; recording it on another
        device's stream raises."""
        if stream is None:
            stream = current_stream(self.device)
        if self.device is not None and self._handle is not None:
            if self.device.type != stream.device.type:
                raise RuntimeError(
                    f"Event device type {self.device.type.upper()} does not match recording "
                    f"stream's device type {stream.device.type.upper()}."
                )
            if self.device.index != stream.device.index:
                raise RuntimeError(
                    f"Event device index {self.device.index} does not match recording "
                    f"stream's device index {stream.device.index}."
                )
        if self._handle is None:
            self._handle = stream._backend.new_event(self.enable_timing)
        self.device = stream.device
        stream._backend.record(self._handle, stream._handle)

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on `stream` (the current stream when None) wait for this event."""
        if stream is None:
            stream = current_stream(self.device)
        stream.wait_event(self)

    def query(self) -> bool:
        """True when the work before the event has completed (or it was never recorded)."""
        device = self.device
        if self._handle is None or device is None:
            return True
        return streams_for(device).query(self._handle)

    def synchronize(self) -> None:
        """Block the host until the work before the event has completed."""
        device = self.device
        if self._handle is not None and device is not None:
            streams_for(device).synchronize_event(self._handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event` (both recorded with timing)."""
        device = self.device
        if self._handle is None or device is None or end_event._handle is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events need enable_timing=True")
        return streams_for(device).elapsed_ms(self._handle, end_event._handle)

    def __repr__(self) -> str:
        where = "unrecorded" if self.device is None else f"on {self.device}"
        return f"<autograd_async.Event {where}>"


def current_stream(device: Any = None) -> Stream:
    """This context's current stream on `device` (the current accelerator when None)."""
    dev = _device(device)
    return Stream._of(dev, stream_handle(dev))


def default_stream(device: Any = None) -> Stream:
    """The default stream of `device`."""
    dev = _device(device)
    return Stream._of(dev, streams_for(dev).default_stream(dev))


@contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    """Make `s` its device's current stream in this context for the block (None: no change)."""
    if s is None:
        yield None
        return
    dev = s.device
    backend = s._backend
    default = backend.default_stream(dev)
    token = stream_overrides.set(with_override(dev, None if s._handle is default else s._handle))
    use = getattr(backend, "use", None)  # a backend whose library keeps its own current stream
    if use is not None:
        use(s._handle)
    try:
        yield s
    finally:
        stream_overrides.reset(token)
        if use is not None:
            use(stream_handle(dev))


def synchronize(device: Any = None) -> None:
    """Block the host until all work on `device` (the current accelerator when None) is done."""
    dev = _device(device)
    streams_for(dev).synchronize_device(dev)


def copy_between(array: Any, src: Device, dst: Device, non_blocking: bool = False) -> Any:
    """Copy `array` from `src` to `dst` ordered as PyTorch orders a cross-device copy.

    Between two accelerators: the destination's current stream waits for the source's, the copy
    runs there, and the source's stream then waits for the copy, so neither side reuses memory
    under it. Device to host: blocking by default (the host waits for the source stream); with
    `non_blocking` the copy goes through pinned memory on the source stream and the caller must
    wait for an event recorded there before reading it (the engine does, without blocking).
    """
    src_streams, dst_streams = streams_for(src), streams_for(dst)
    if src_streams.trivial and dst_streams.trivial:
        return move_array(array, src, dst)
    if dst.type == "cpu":
        source = stream_handle(src)
        if non_blocking and hasattr(src_streams, "copy_to_host_async"):
            return src_streams.copy_to_host_async(array, source)
        out = move_array(array, src, dst)
        if sanitizer_enabled() and sanitizer_watches(src):
            sanitizer.access(array, src, source, False, "a copy to the host")
            if non_blocking:
                sanitizer.written_by(out, dst, source, "a copy to the host")
        if not non_blocking:
            src_streams.synchronize_stream(source)
        return out
    # From host memory: in host order. Between two devices: `move_array` orders the copy.
    return move_array(array, src, dst)
