"""Records the engine emits while a trace sink is installed.

The engine only appends these plain tuples to a sink; turning them into a trace, a table or a
picture is the profiler's job (a layer above). Times are `time.perf_counter_ns()` values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..core.recording import ForwardOp  # noqa: F401 - a record kind of the trace, made in core


class NodeRun(NamedTuple):
    """One execution of a backward node on a device worker."""

    device: str  # "cpu", "sim:0", "cuda:0"
    thread_id: int  # threading.get_ident() of the thread that ran it
    thread_name: str
    name: str  # node name, e.g. "MulBackward0"
    sequence_nr: int
    task_id: int  # graph task id
    node_id: int  # unique id of this node execution's node (id(node)) within the trace
    start_ns: int
    end_ns: int
    input_shapes: tuple  # shapes of the gradients the node received
    output_shapes: tuple  # shapes of the gradients it produced (None for no gradient)


class RawNodeRun(NamedTuple):
    """What the engine records per node run while tracing, as a *plain* tuple of these fields.

    A plain tuple is the cheapest record Python can make (the engine makes one per node run);
    `expand_records` turns each into a NodeRun, reading names and shapes from the node then, off
    the hot path. Holding the node keeps its (already released) graph structure alive until then.
    """

    node: Any
    worker: Any  # the DeviceWorker: its device name and its threads' names
    thread_id: int
    task_id: int
    start_ns: int
    end_ns: int

    def expand(self) -> NodeRun:
        """The full NodeRun: gradient shapes are the shapes the engine validated them against."""
        node, worker = self.node, self.worker
        received = tuple(meta[0] for meta in node._out_meta)
        produced = tuple(
            None if nxt is None else nxt._out_meta[nr][0] for nxt, nr in node.next_functions
        )
        return NodeRun(
            worker._device_name,
            self.thread_id,
            worker.thread_name(self.thread_id),
            node.name(),
            node._seq,
            self.task_id,
            id(node),
            self.start_ns,
            self.end_ns,
            received,
            produced,
        )


def expand_records(events: list) -> list:
    """Replace the engine's raw node-run tuples by NodeRun records, and pending GPU spans by
    their resolved GpuKernelSpan, in place; returns the list."""
    for i, event in enumerate(events):
        kind = type(event)
        if kind is tuple:  # every other record is a NamedTuple
            events[i] = RawNodeRun(*event).expand()
        elif kind is PendingGpuSpan:
            events[i] = event.expand()
    return events


class Handoff(NamedTuple):
    """A gradient sent from a node on one device to a node on another."""

    task_id: int
    src_device: str
    dst_device: str
    src_node_id: int  # node_id of the producing NodeRun
    dst_node_id: int  # node_id of the consuming node (its NodeRun follows later)
    sent_ns: int
    received_ns: int
    src_thread_id: int
    dst_thread_id: int


class CallerAwait(NamedTuple):
    """The caller's wait for one graph task (backward / grad, sync or async)."""

    task_id: int
    thread_id: int
    thread_name: str
    kind: str  # "backward", "backward_async", "grad", "grad_async"
    start_ns: int
    end_ns: int


class GpuKernelSpan(NamedTuple):
    """Device-side time of a node's kernels, measured with CUDA events on the node's stream."""

    device: str  # "cuda:0"
    name: str
    sequence_nr: int
    task_id: int
    node_id: int
    start_ns: int  # placed on the host clock: host start of the node + elapsed between events
    end_ns: int


class PendingGpuSpan(NamedTuple):
    """A node's kernels bracketed by two timing events whose elapsed time is not read yet.

    Reading it waits for the end event, so that happens when the trace is read or exported
    (`expand`), never on the worker that recorded it.
    """

    device: str
    name: str
    sequence_nr: int
    task_id: int
    node_id: int
    host_start_ns: int
    backend: Any  # the device's stream backend
    start_event: Any
    end_event: Any

    def expand(self) -> GpuKernelSpan:
        """The span: device time between the events, placed at the node's host start."""
        self.backend.synchronize_event(self.end_event)
        elapsed_ns = int(self.backend.elapsed_ms(self.start_event, self.end_event) * 1e6)
        return GpuKernelSpan(
            self.device,
            self.name,
            self.sequence_nr,
            self.task_id,
            self.node_id,
            self.host_start_ns,
            self.host_start_ns + elapsed_ns,
        )


class CollectiveSpan(NamedTuple):
    """A collective on a communication track: from its launch to its completion."""

    rank: int  # this process's rank in the group
    group: str  # the group's description, e.g. "group WORLD (mpi, ranks 0, 1)"
    name: str  # e.g. "all_reduce bucket 0"
    start_ns: int
    end_ns: int
    nbytes: int
    source_node_id: int  # id() of the node whose gradient completed it (0: none)
    source_ns: int  # when that gradient was accumulated
