"""Which stream is current on each device, for the running context (thread or task).

One ContextVar holds a small mapping device -> stream handle, set only where a stream other than a
device's default is made current (`with aa.stream(s):`, or a backward node that runs on the stream
its forward ran on). `None`, the usual value, means every device runs on its default stream, so a
node records its stream with one ContextVar read and the plain path does no stream work at all.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..devices import Device

# device -> stream handle of that device's backend; None: default streams everywhere.
stream_overrides: contextvars.ContextVar[dict[Device, Any] | None] = contextvars.ContextVar(
    "autograd_async_current_streams", default=None
)


def override_for(device: Device) -> Any:
    """The stream made current on `device` in this context, or None for its default stream."""
    overrides = stream_overrides.get()
    return None if overrides is None else overrides.get(device)


def with_override(device: Device, stream: Any) -> dict[Device, Any] | None:
    """The mapping of this context with `stream` current on `device` (None: its default)."""
    overrides = stream_overrides.get()
    changed = dict(overrides) if overrides else {}
    if stream is None:
        changed.pop(device, None)
    else:
        changed[device] = stream
    return changed or None
