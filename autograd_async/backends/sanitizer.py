"""The stream sanitizer of the CUDA-faithful sim mode, modelled on PyTorch's CUDA sanitizer.

Every array accessed on a `sim` device remembers, per memory buffer (a view counts as its base),
the stream that last wrote it with that stream's launch count, and the streams that read it since.
An access from another stream whose vector clock has not reached that point (it has not waited on
an event recorded after the write, or after the read for a write) raises `StreamRaceError`,
naming both streams, the device and the op: on a GPU that access would race.

As PyTorch's sanitizer (CSAN), creating a tensor counts as a write on the current stream: a tensor
made on the default stream and read on a side stream needs `side.wait_stream(default)` first.
The host is one more stream: it never races with the streams it launches work on, but reading an
array a stream wrote asynchronously (a non-blocking device-to-host copy) needs a host
synchronisation first (`Event.synchronize`, or the engine's completion callback).

Active only when `sim_mode.cuda_rules()`; nothing here runs in the plain sim mode.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from .sim_mode import sim_mode_state
from .sim_streams import SimStream, _merge, sim_world

if TYPE_CHECKING:
    from ..devices import Device


class StreamRaceError(RuntimeError):
    """An array accessed on one stream while another stream's unsynchronised access may run."""


class BufferAccess:
    """What the sanitizer knows of one buffer: its last writer and the reads since."""

    __slots__ = ("ref", "writer", "written_at", "reads")

    def __init__(self, ref: weakref.ref) -> None:
        self.ref = ref
        self.writer: SimStream | None = None
        self.written_at = 0
        self.reads: dict[SimStream, int] = {}


def enabled() -> bool:
    """True when sim devices follow CUDA's rules, so the sanitizer checks every access."""
    return sim_mode_state.mode == "cuda"


#: The device type whose arrays the sanitizer tracks: sim devices, the ones with logical streams.
WATCHED_TYPE = "sim"


def watches(device: Any) -> bool:
    """True when the sanitizer tracks `device`'s arrays (the mode is checked by `enabled`)."""
    return device.type == WATCHED_TYPE


def _owner(array: Any) -> Any:
    """The object owning the array's memory (NumPy views point at it through `.base`)."""
    owner = array
    base = getattr(owner, "base", None)
    while base is not None and hasattr(base, "shape"):
        owner = base
        base = getattr(owner, "base", None)
    return owner


class StreamSanitizer:
    """Buffer -> last access, checked against the accessing stream's vector clock."""

    def __init__(self) -> None:
        self.world = sim_world
        self._buffers: dict[int, BufferAccess] = {}

    def stream_for(self, device: Device) -> SimStream | None:
        """The stream an access to `device` memory happens on here (None: not checked)."""
        kind = device.type
        if kind == "sim":
            from .stream_context import override_for  # noqa: PLC0415 - tiny, kept local

            found = override_for(device)
            return found if found is not None else self.world.default_stream(device)
        if kind == "cpu":
            return self.world.host
        return None

    def access(
        self, array: Any, device: Device, stream: SimStream, write: bool, op: str
    ) -> None:
        """Check one read or write of `array` (on `device`) by `stream`, then remember it."""
        owner = _owner(array)
        key = id(owner)
        world = self.world
        host = world.host
        with world.lock:
            if stream is not host:
                _merge(stream.clock, host.clock)  # work the host launches follows what it saw
            count = world.launch(stream)
            state = self._buffers.get(key)
            if state is not None and state.ref() is not owner:
                state = None  # a dead buffer's id, reused
            if state is None:
                try:
                    ref = weakref.ref(owner, self._forget_callback(key))
                except TypeError:
                    return  # not trackable (a buffer that is not weakly referenceable)
                state = self._buffers[key] = BufferAccess(ref)
            clock = stream.clock
            writer = state.writer
            if (
                writer is not None
                and writer is not stream
                and writer is not host
                and clock.get(writer.id, 0) < state.written_at
            ):
                raise _race(op, write, device, stream, writer, "wrote")
            if write:
                for reader, at in state.reads.items():
                    if reader is not stream and reader is not host and clock.get(reader.id, 0) < at:
                        raise _race(op, write, device, stream, reader, "read")
                state.writer = stream
                state.written_at = count
                state.reads = {}
            else:
                state.reads[stream] = count

    def _forget_callback(self, key: int) -> Any:
        buffers = self._buffers

        def forget(ref: weakref.ref) -> None:
            state = buffers.get(key)
            if state is not None and state.ref is ref:
                buffers.pop(key, None)

        return forget

    def read(self, array: Any, device: Device, op: str) -> None:
        """A read of `array` on `device`'s current stream."""
        stream = self.stream_for(device)
        if stream is not None:
            self.access(array, device, stream, False, op)

    def write(self, array: Any, device: Device, op: str) -> None:
        """A write of `array` on `device`'s current stream."""
        stream = self.stream_for(device)
        if stream is not None:
            self.access(array, device, stream, True, op)

    def written_by(self, array: Any, device: Device, stream: SimStream, op: str) -> None:
        """`array` (on `device`) was written by `stream`, e.g. a copy into host memory that
        `stream` runs without the host waiting."""
        self.access(array, device, stream, True, op)


def _race(
    op: str, write: bool, device: Device, stream: SimStream, other: SimStream, did: str
) -> StreamRaceError:
    what = "write" if write else "read"
    return StreamRaceError(
        f"stream race in {op}: {what} of an array on {device} on {stream.label}, which "
        f"{other.label} {did} without {stream.label} having waited for it since; make "
        f"{stream.label} wait first (`aa.current_stream(...).wait_stream(other)`, or "
        "`wait_event` on an event recorded after that access)"
    )


sanitizer = StreamSanitizer()
