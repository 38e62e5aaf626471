"""Where forward ops report themselves while a profiler records the forward pass.

A ContextVar, so recording follows the thread or asyncio task that asked for it and nothing else.
"""

from __future__ import annotations

import contextvars
from typing import Any, NamedTuple

forward_sink: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "autograd_async_forward_sink", default=None
)


class ForwardOp(NamedTuple):
    """One forward op recorded on the thread that ran it (profile(record_forward=True))."""

    thread_id: int
    thread_name: str
    name: str  # op name, e.g. "mul"
    sequence_nr: int  # sequence number given to its node, -1 when no node was made
    start_ns: int
    end_ns: int
    input_shapes: tuple
    output_shapes: tuple
