"""Streams and events as a backend provides them; `aa.Stream`/`aa.Event` wrap these handles.

A stream is an ordered queue of device work; an event marks a point in a stream that other streams
(or the host) can wait for. The `cpu` backend runs everything in order on the host, so its streams
are trivial; `cuda` maps them onto CuPy streams and events; `sim` keeps them as logical queues with
vector clocks so that, in the CUDA-faithful sim mode, a missing wait is caught as a stream race.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..devices import Device


class StreamBackend(ABC):
    """Per-device-type stream and event operations, on opaque handles the backend defines."""

    #: True when every thread has its own default stream (CuPy's
    #: CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1), which backward refuses (see `stream_sync`).
    per_thread_default = False

    @property
    def trivial(self) -> bool:
        """True when work runs in order with nothing to wait for (the cpu's streams): the engine
        and copies then skip events between streams. Each backend says which it is."""
        return False

    def record_stream(self, array: Any, stream: Any) -> None:
        """`array` is used on `stream`: its memory is not reused before `stream`'s work queued
        so far completes (PyTorch's `Tensor.record_stream`). Nothing to do for host memory."""
        del array, stream

    @abstractmethod
    def default_stream(self, device: Device) -> Any:
        """The stream work on `device` goes to when no other is current."""

    @abstractmethod
    def current_stream(self, device: Device) -> Any:
        """This thread's current stream on `device`."""

    @abstractmethod
    def set_current_stream(self, device: Device, stream: Any) -> Any:
        """Make `stream` current on `device` for this thread; returns the previous one."""

    @abstractmethod
    def new_stream(self, device: Device, priority: int = 0) -> Any:
        """A new stream on `device`."""

    @abstractmethod
    def new_event(self, enable_timing: bool = False) -> Any:
        """A new, unrecorded event."""

    @abstractmethod
    def record(self, event: Any, stream: Any) -> None:
        """Record `event` at the current end of `stream`."""

    @abstractmethod
    def wait_event(self, stream: Any, event: Any) -> None:
        """Make future work on `stream` wait for `event` (no host blocking)."""

    @abstractmethod
    def query(self, event: Any) -> bool:
        """True when all work before `event` has completed."""

    @abstractmethod
    def synchronize_event(self, event: Any) -> None:
        """Block the host until `event` completes."""

    @abstractmethod
    def synchronize_stream(self, stream: Any) -> None:
        """Block the host until all work on `stream` completes."""

    @abstractmethod
    def synchronize_device(self, device: Device) -> None:
        """Block the host until all work on `device` completes."""

    @abstractmethod
    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Device time between two recorded timing events, in milliseconds."""

    @abstractmethod
    def when_complete(self, event: Any, loop: Any, callback: Any) -> None:
        """Call `callback()` on `loop` (via call_soon_threadsafe) once `event` completes, without
        blocking the loop's thread (e.g. a host callback or a polling thread)."""
