"""Which stream is current on each device, for the running thread.

Per thread, as PyTorch's current stream and as CuPy's (which decides where every kernel, sum,
`get()` and copy goes): a ContextVar would let a task that awaits inside `with aa.stream(s):`
leave CuPy launching the other tasks of its thread on `s` while the library believes they run on
the default stream. So the library keeps the same per-thread state CuPy does: tasks sharing a
thread share its current stream, as they do in PyTorch.

One small mapping device -> stream handle per thread, set only where a stream other than a
device's default is made current (`with aa.stream(s):`, or a backward node that runs on the stream
its forward ran on). `None`, the usual value, means every device runs on its default stream, so a
node records its stream with one attribute read and the plain path does no stream work at all.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..devices import Device


class _PerThread(threading.local):
    value: dict | None = None


class ThreadStreams:
    """The per-thread mapping, read and set with a ContextVar's `get`/`set`/`reset` (a token
    is the previous value)."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = _PerThread()

    def get(self) -> dict[Device, Any] | None:
        """This thread's mapping (None: default streams everywhere)."""
        return self._local.value

    def set(self, value: dict[Device, Any] | None) -> dict[Device, Any] | None:
        """Replace this thread's mapping; returns the token that `reset` restores."""
        local = self._local
        previous = local.value
        local.value = value
        return previous

    def reset(self, token: dict[Device, Any] | None) -> None:
        """Restore the mapping `set` replaced."""
        self._local.value = token


# device -> stream handle of that device's backend; None: default streams everywhere.
stream_overrides = ThreadStreams()


def override_for(device: Device) -> Any:
    """The stream made current on `device` in this thread, or None for its default stream."""
    overrides = stream_overrides.get()
    return None if overrides is None else overrides.get(device)


def with_override(device: Device, stream: Any) -> dict[Device, Any] | None:
    """The mapping of this thread with `stream` current on `device` (None: its default)."""
    overrides = stream_overrides.get()
    changed = dict(overrides) if overrides else {}
    if stream is None:
        changed.pop(device, None)
    else:
        changed[device] = stream
    return changed or None
