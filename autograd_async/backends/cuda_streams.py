"""Streams and events of `cuda:N` devices, on CuPy streams and events (CuPy imported lazily).

Side streams are non-blocking (`cudaStreamNonBlocking`, as PyTorch's): they never synchronise
implicitly with the legacy default stream, so every ordering between streams is an explicit event
wait, the same rules the sim mode's sanitizer checks. The default stream of each device is CUDA's
legacy default stream, shared by all threads as PyTorch's is. CuPy's per-thread default streams
(`CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1`) would leave the caller's forward and the workers'
backward on unjoined streams: backward refuses to run under them (`per_thread_default`).

Completion reaches an event loop without blocking it: one waiter thread per process blocks on the
events handed to it, in order, and schedules each callback on its loop.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from .stream_context import override_for, stream_overrides, with_override
from .streams_base import StreamBackend

if TYPE_CHECKING:
    from ..devices import Device


def _cupy() -> Any:
    import cupy  # noqa: PLC0415 - optional, and slow to import

    return cupy


class CudaStream:
    """A CuPy stream and the index of the GPU it belongs to."""

    __slots__ = ("index", "raw", "label", "priority", "__weakref__")

    def __init__(self, index: int, raw: Any, label: str, priority: int = 0) -> None:
        self.index = index
        self.raw = raw
        self.label = label
        self.priority = priority

    def __repr__(self) -> str:
        return f"<CudaStream {self.label}>"


class CudaEvent:
    """A CuPy event, made on the device of the first stream it is recorded on."""

    __slots__ = ("enable_timing", "raw", "index")

    def __init__(self, enable_timing: bool) -> None:
        self.enable_timing = enable_timing
        self.raw: Any = None
        self.index: int | None = None


class CompletionWaiter:
    """One thread that blocks on events for the loops that must not: callbacks go to their loop."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, event: CudaEvent, loop: Any, callback: Any) -> None:
        """Call `callback()` on `loop` once `event` completes."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="autograd-async:cuda-completion", daemon=True
                    )
                    self._thread.start()
        self._queue.put((event, loop, callback))

    def _run(self) -> None:
        while True:
            event, loop, callback = self._queue.get()
            try:
                if event.raw is not None:
                    event.raw.synchronize()
            except Exception:  # noqa: BLE001 - a device error: the consumer's own work reports it
                pass  # and this thread must live on for the events queued behind this one
            try:
                loop.call_soon_threadsafe(callback)
            except RuntimeError:
                pass  # the loop closed: its worker fails whatever it held


class CudaStreamState:
    """What every `CudaStreams` shares: each GPU's default stream object (streams are compared
    by identity), the side-stream numbering and the one completion thread."""

    def __init__(self) -> None:
        self.defaults: dict[int, CudaStream] = {}
        self.counts: dict[int, int] = {}
        self.lock = threading.Lock()
        self.waiter = CompletionWaiter()
        # record_stream: (event on the stream, array) kept alive until the event completes.
        self.in_use: deque = deque()


cuda_stream_state = CudaStreamState()


class CudaStreams(StreamBackend):
    """CUDA streams and events through CuPy."""

    trivial = False

    def record_stream(self, array: Any, stream: Any) -> None:
        """Keep `array` (so its pool block) alive until the work queued on `stream` now is done.

        CuPy's pool has no record_stream: it reuses a freed block on the stream that allocated
        it at once. Unlike PyTorch's, which waits for the work queued up to the free, this waits
        for the work queued up to the call (callers record after their last use)."""
        cupy = _cupy()
        held = cuda_stream_state.in_use
        while held and held[0][0].done:
            held.popleft()
        with cupy.cuda.Device(stream.index):
            event = cupy.cuda.Event(disable_timing=True)
            event.record(stream.raw)
        held.append((event, array))

    def __init__(self) -> None:
        state = cuda_stream_state
        self._defaults = state.defaults
        self._counts = state.counts
        self._lock = state.lock
        self._waiter = state.waiter
        # CuPy reads CUPY_CUDA_PER_THREAD_DEFAULT_STREAM once, at import: so do we, once.
        flag = os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0").strip()
        self.per_thread_default = flag not in ("", "0")

    def default_stream(self, device: Device) -> CudaStream:
        """CUDA's legacy default stream of `device`."""
        index = device._accelerator_index
        found = self._defaults.get(index)
        if found is None:
            with self._lock:
                found = self._defaults.get(index)
                if found is None:
                    found = CudaStream(index, _cupy().cuda.Stream.null, f"{device} default stream")
                    self._defaults[index] = found
        return found

    def current_stream(self, device: Device) -> CudaStream:
        """This context's current stream on `device`."""
        found = override_for(device)
        return found if found is not None else self.default_stream(device)

    def set_current_stream(self, device: Device, stream: Any) -> CudaStream:
        """Make `stream` current on `device` here, and CuPy's current stream on this thread."""
        previous = self.current_stream(device)
        default = self.default_stream(device)
        stream_overrides.set(with_override(device, None if stream is default else stream))
        self.use(stream)
        return previous

    def use(self, stream: CudaStream) -> None:
        """Make `stream` CuPy's current stream of its device on this thread."""
        with _cupy().cuda.Device(stream.index):
            stream.raw.use()

    def new_stream(self, device: Device, priority: int = 0) -> CudaStream:
        """A new non-blocking stream on `device`."""
        cupy = _cupy()
        index = device._accelerator_index
        with self._lock:
            number = self._counts.get(index, 0) + 1
            self._counts[index] = number
        with cupy.cuda.Device(index):
            raw = cupy.cuda.Stream(non_blocking=True, priority=priority or None)
        return CudaStream(index, raw, f"{device} stream {number}", priority)

    def new_event(self, enable_timing: bool = False) -> CudaEvent:
        """A new, unrecorded event."""
        return CudaEvent(enable_timing)

    def record(self, event: Any, stream: Any) -> None:
        """Record `event` on `stream` (the event is made on the stream's device at first use)."""
        cupy = _cupy()
        with cupy.cuda.Device(stream.index):
            if event.raw is None:
                event.raw = cupy.cuda.Event(disable_timing=not event.enable_timing)
                event.index = stream.index
            event.raw.record(stream.raw)

    def wait_event(self, stream: Any, event: Any) -> None:
        """Later work on `stream` waits for `event` (the host does not wait)."""
        if event.raw is None:
            return
        with _cupy().cuda.Device(stream.index):
            stream.raw.wait_event(event.raw)

    def query(self, event: Any) -> bool:
        """True when the work before `event` has completed."""
        return event.raw is None or bool(event.raw.done)

    def synchronize_event(self, event: Any) -> None:
        """Block the host until `event` completes."""
        if event.raw is not None:
            event.raw.synchronize()

    def synchronize_stream(self, stream: Any) -> None:
        """Block the host until `stream`'s work completes."""
        with _cupy().cuda.Device(stream.index):
            stream.raw.synchronize()

    def synchronize_device(self, device: Device) -> None:
        """Block the host until all work on `device` completes."""
        _cupy().cuda.Device(device.index).synchronize()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Device time between two recorded timing events."""
        if start.raw is None or end.raw is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return float(_cupy().cuda.get_elapsed_time(start.raw, end.raw))

    def when_complete(self, event: Any, loop: Any, callback: Any) -> None:
        """Call `callback()` on `loop` once `event` completes (a waiter thread blocks, not it)."""
        self._waiter.add(event, loop, callback)

    def copy_to_host_async(self, array: Any, stream: CudaStream) -> Any:
        """A NumPy array in pinned memory that `stream` fills from `array` without the host
        waiting; read it only after an event recorded on `stream` afterwards completes."""
        cupy = _cupy()
        import cupyx  # noqa: PLC0415

        with cupy.cuda.Device(stream.index):
            source = cupy.ascontiguousarray(array)
            out = cupyx.empty_pinned(source.shape, source.dtype)
            try:
                source.get(stream=stream.raw, out=out, blocking=False)
            except TypeError:  # CuPy before `blocking=`: a stream and a pinned `out` are async
                source.get(stream=stream.raw, out=out)
        return out
