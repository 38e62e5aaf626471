"""Device-side timing of a node's kernels with events on the stream the node runs on.

Used only while a trace sink asks for it (`sink.gpu_timing`) on workers of devices with streams
(`cuda`, and `sim` in the CUDA-faithful mode): each node's kernels are bracketed by two timing
events. Nothing waits for them here: the record keeps the events, and the elapsed time is read
when the trace is (`PendingGpuSpan.expand`), so profiling never makes the worker wait on the GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .trace_events import PendingGpuSpan


def timed_on_stream(
    backend: Any,
    stream: Any,
    device: str,
    node: Any,
    task_id: int,
    host_start_ns: int,
    run: Callable[[], Any],
    sink: Any,
) -> Any:
    """Run `run()` between two timing events on `stream` and record the pending span."""
    start, end = backend.new_event(True), backend.new_event(True)
    backend.record(start, stream)
    result = run()
    backend.record(end, stream)
    sink.record(
        PendingGpuSpan(
            device, node.name(), node._seq, task_id, id(node), host_start_ns, backend, start, end
        )
    )
    return result
