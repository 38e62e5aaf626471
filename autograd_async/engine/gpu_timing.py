"""Device-side timing of a node's kernels with CUDA events on the worker's current stream.

Used only while a trace sink asks for it (`sink.gpu_timing`) on `cuda` workers: each node's kernels
are bracketed by two events, and the elapsed device time is placed on the host clock at the node's
host start, so host-side driving and device-side execution show side by side in a trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .trace_events import GpuKernelSpan


def timed_on_gpu(
    device: Any, node: Any, task_id: int, host_start_ns: int, run: Callable[[], Any], sink: Any
) -> Any:
    """Run `run()` between two CUDA events and record the device-side span; returns its result."""
    import cupy  # noqa: PLC0415 - only cuda workers get here

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    result = run()
    end.record()
    end.synchronize()  # profiling only: the span must be known before the record is made
    elapsed_ns = int(cupy.cuda.get_elapsed_time(start, end) * 1e6)
    sink.record(
        GpuKernelSpan(
            str(device), node.name(), node._seq, task_id, id(node), host_start_ns,
            host_start_ns + elapsed_ns,
        )
    )
    return result
