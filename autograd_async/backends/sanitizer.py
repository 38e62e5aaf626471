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

Host reads of device memory (`item()`, `tolist()`, `bool()`, NumPy conversion, NaN checks)
are reads on the thread's current stream followed by a host synchronisation with it, as CuPy's
`get()`; host reads of host memory that a stream fills asynchronously are checked against it.

The sanitizer also plays CuPy's caching allocator, which hands a freed block to the next
allocation of its size on the stream it was allocated on, without waiting for other streams: a
freed buffer's record (last writer, reads) goes to a pool per (device, stream, size), and the
next buffer of that size first written on that stream inherits it, so a read by another stream
that nothing ordered before the new write is reported, just as the GPU would overwrite memory
still being read. `record_stream` (PyTorch's `Tensor.record_stream`) marks a buffer as used on
another stream: its block is reused only once that stream's work queued so far has completed.

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
    """What the sanitizer knows of one buffer: its last writer and the reads since, and for a
    block of the simulated allocator, where it was allocated and the streams recorded on it."""

    __slots__ = ("ref", "writer", "written_at", "reads", "block", "recorded")

    def __init__(self, ref: weakref.ref) -> None:
        self.ref = ref
        self.writer: SimStream | None = None
        self.written_at = 0
        self.reads: dict[SimStream, int] = {}
        self.block: tuple | None = None  # (device, allocating stream id, size in bytes)
        # record_stream: stream id -> the stream until freed, then -> its count at the free
        self.recorded: dict[int, Any] | None = None


#: Freed blocks kept per (device, stream, size): enough to model reuse, bounded in memory.
POOL_DEPTH = 8


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
        self._pool: dict[tuple, list[BufferAccess]] = {}

    def stream_for(self, device: Device) -> SimStream | None:
        """The stream an access to `device` memory happens on here (None: not checked): the
        thread's launch stream, as on CuPy, whatever the library believes is current."""
        kind = device.type
        if kind == "sim":
            return self.world.launch_stream(device)
        if kind == "cpu":
            return self.world.host
        return None

    def access(self, array: Any, device: Device, stream: SimStream, write: bool, op: str) -> None:
        """Check one read or write of `array` (on `device`) by `stream`, then remember it."""
        owner = _owner(array)
        key = id(owner)
        world = self.world
        host = world.host
        with world.lock:
            if stream is not host:
                _merge(stream.clock, host.clock)  # work the host launches follows what it saw
                if world.deferred:  # in-order streams: work this one is after has run first
                    world.complete(stream.clock)
            count = world.launch(stream)
            state = self._buffers.get(key)
            if state is not None and state.ref() is not owner:
                state = None  # a dead buffer's id, reused
            if state is None:
                try:
                    ref = weakref.ref(owner, self._forget_callback(key))
                except TypeError:
                    return  # not trackable (a buffer that is not weakly referenceable)
                state = self._allocate(owner, device, stream, write, ref)
                self._buffers[key] = state
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

    def _allocate(
        self, owner: Any, device: Device, stream: SimStream, write: bool, ref: weakref.ref
    ) -> BufferAccess:
        """The record of a buffer seen for the first time: a freed block of its size from the
        pool of the stream that first writes it (the allocator's reuse), else a new one."""
        if not write or stream is self.world.host or device.type != WATCHED_TYPE:
            return BufferAccess(ref)
        block = (device, stream.id, getattr(owner, "nbytes", 0))
        freed = self._pool.get(block)
        if freed:
            state = freed.pop()
            if state.recorded:  # record_stream: the allocator waited for those streams' events
                self.world.host_waits(state.recorded)
                _merge(stream.clock, self.world.host.clock)  # so work launched now is after
                state.recorded = None
            state.ref = ref
            return state
        state = BufferAccess(ref)
        state.block = block
        return state

    def record_stream(self, array: Any, device: Device, stream: SimStream) -> None:
        """`array`'s block is in use on `stream`: once freed, it is reused only after the work
        queued on `stream` up to the free."""
        if stream is self.world.host or not watches(device):
            return
        state = self._buffers.get(id(_owner(array)))
        if state is None or state.block is None or state.block[1] == stream.id:
            return
        with self.world.lock:
            if state.recorded is None:
                state.recorded = {}
            state.recorded[stream.id] = stream  # its work at the block's free is what counts

    def _forget_callback(self, key: int) -> Any:
        buffers = self._buffers
        pool = self._pool

        def forget(ref: weakref.ref) -> None:
            state = buffers.get(key)
            if state is not None and state.ref is ref:
                buffers.pop(key, None)
                if state.block is not None:  # back to its stream's pool, reads and all
                    if state.recorded:
                        state.recorded = {
                            sid: stream.counter for sid, stream in state.recorded.items()
                        }
                    freed = pool.setdefault(state.block, [])
                    if len(freed) < POOL_DEPTH:
                        freed.append(state)

        return forget

    def empty_cache(self) -> None:
        """Forget the freed blocks (as `torch.cuda.empty_cache()` hands them back): a test that
        leaves a race behind on purpose does not pass it to the next one."""
        self._pool.clear()

    def host_read(self, array: Any, device: Device, op: str) -> None:
        """The host reads `array` (on `device`): for device memory a read on this thread's
        stream and a host synchronisation with it (CuPy's `get()`); for host memory a check
        that no stream still fills it."""
        if device.type == WATCHED_TYPE:
            stream = self.world.launch_stream(device)
            self.access(array, device, stream, False, op)
            self.world.host_sync(dict(stream.clock))
        elif id(_owner(array)) in self._buffers:  # host memory a stream wrote (pinned)
            self.access(array, device, self.world.host, False, op)

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
