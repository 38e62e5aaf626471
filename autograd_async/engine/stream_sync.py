"""Where a backward pass orders streams: PyTorch's "stream semantics of backward passes".

Each node runs on the stream its forward ran on (`node._stream`, None for its device's default).
A gradient that crosses streams makes the consumer's stream wait on an event recorded on the
producer's; the root nodes wait for the caller's current streams, and the caller's current streams
wait, when the task finishes, for every stream that ran a node, so the caller reads `.grad` safely.
None of these block the host: an event is recorded and another stream told to wait for it.

Every wait the engine makes goes through `order`, named by its site (see WAIT_SITES), so a test
can remove any one of them and see the sanitizer of the CUDA-faithful sim mode catch it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..backends.sanitizer import sanitizer
from ..backends.sanitizer import watches as sanitizer_watches
from ..backends.stream_context import override_for
from ..streams import streams_for

if TYPE_CHECKING:
    from ..core.graph import Node
    from ..devices import Device
    from ..graph_task import GraphTask

#: The places a backward pass makes one stream wait for another.
WAIT_SITES = (
    "start",  # a root node's stream waits for the caller's current stream (its gradient)
    "same_device",  # a consumer node's stream waits for its producer's, on one device
    "cross_device",  # a consumer's stream waits for the stream that copied its gradient over
    "finish",  # the caller's current streams wait for the streams that ran the task's nodes
)


def order(site: str, backend: Any, producer: Any, consumer: Any) -> None:
    """Make later work on `consumer` wait for the work queued on `producer` so far."""
    event = backend.new_event()
    backend.record(event, producer)
    backend.wait_event(consumer, event)


def stream_of(node: Node, backend: Any) -> Any:
    """The stream a node runs its backward on."""
    stream = node._stream
    return stream if stream is not None else backend.default_stream(node.device)


def caller_stream(task: GraphTask, device: Device, backend: Any) -> Any:
    """The caller's current stream on `device` when it started the task."""
    caller = task.caller_streams
    found = None if caller is None else caller.get(device)
    return found if found is not None else backend.default_stream(device)


PER_THREAD_DEFAULT_MESSAGE = (
    "backward cannot run under per-thread default streams "
    "(CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1): the caller's forward and the device workers' "
    "backward would run on separate default streams that nothing orders. Unset the variable "
    "(the default stream is then CUDA's legacy stream, shared by all threads, as PyTorch's), or "
    "run the forward in `with aa.stream(s):` on a stream of your own"
)


def check_default_streams(starts: list) -> None:
    """Refuse per-thread default streams on the devices a backward pass starts on."""
    for node, _, _ in starts:
        backend = streams_for(node.device)
        if backend.per_thread_default and node._stream is None:
            raise RuntimeError(PER_THREAD_DEFAULT_MESSAGE)


def sync_start(task: GraphTask, starts: list) -> None:
    """Each root node's stream waits for the caller's stream, where its gradient was made."""
    for node, _, _ in starts:
        backend = streams_for(node.device)
        if backend.trivial and node._stream is None:
            continue
        caller = caller_stream(task, node.device, backend)
        mine = stream_of(node, backend)
        if mine is not caller:
            order("start", backend, caller, mine)


def sync_finish(task: GraphTask) -> None:
    """The caller's current streams wait for every stream that ran a node of the task."""
    side = task.side_streams or {}
    used: dict[Device, set] = {dev: set(streams) for dev, streams in side.items()}
    for dev in task.caller_streams or ():  # the default streams may have run nodes too
        used.setdefault(dev, set()).add(streams_for(dev).default_stream(dev))
    for dev, streams in used.items():
        backend = streams_for(dev)
        target = caller_stream(task, dev, backend)
        for stream in streams:
            if stream is not target:
                order("finish", backend, stream, target)


def sync_consumers(node: Node, stream: Any, backend: Any, outputs: tuple) -> None:
    """Before its gradients are deposited: each consumer's stream waits for the stream that
    wrote its gradient (this node's, or the current stream of the consumer's device when a copy
    put it there)."""
    device = node.device
    pairs = iter(node._edges)
    for nxt, _, grad in zip(pairs, pairs, outputs):
        if nxt is None or grad is None:
            continue
        where = nxt.device
        if where is device:
            consumer = nxt._stream
            if consumer is None:
                consumer = backend.default_stream(device)
            if consumer is not stream:
                order("same_device", backend, stream, consumer)
                # Allocated on this stream, read on the consumer's: as PyTorch's InputBuffer
                # does, keep the allocator from reusing it before the consumer is done.
                backend.record_stream(_array(grad), consumer)
            continue
        if where.type == "cpu":
            continue  # the host: the engine delivers the gradient once its copy completed
        other = streams_for(where)
        if other.trivial and nxt._stream is None:
            continue
        writer = override_for(where)
        if writer is None:
            writer = other.default_stream(where)
        consumer = nxt._stream if nxt._stream is not None else other.default_stream(where)
        if consumer is not writer:
            order("cross_device", other, writer, consumer)
            other.record_stream(_array(grad), consumer)


# ------------------------------------------------------------------ sanitizer
def _array(grad: Any) -> Any:
    data = getattr(grad, "_data", None)  # a Tensor under create_graph
    return grad if data is None else data


def check_reads(node: Node, stream: Any, inputs: list) -> None:
    """The sanitizer: a node reads its input gradients on its stream (the host on the cpu)."""
    device = node.device
    if device.type == "cpu":
        stream = sanitizer.world.host
    elif not sanitizer_watches(device):
        return
    name = node.name()
    for grad in inputs:
        if grad is not None:
            sanitizer.access(_array(grad), device, stream, False, name)


def check_writes(node: Node, stream: Any, outputs: tuple) -> None:
    """The sanitizer: a node writes its output gradients (and AccumulateGrad the `.grad`)."""
    device = node.device
    name = node.name()
    variable = getattr(node, "variable", None)
    if variable is not None and sanitizer_watches(device) and variable._grad is not None:
        sanitizer.access(variable._grad._data, device, stream, True, name)
    pairs = iter(node._edges)
    for nxt, _, grad in zip(pairs, pairs, outputs):
        if nxt is None or grad is None:
            continue
        where = nxt.device
        if not sanitizer_watches(where):
            continue  # host memory: written by the host, or by a copy that recorded itself
        writer = stream if where is device else sanitizer.world.launch_stream(where)
        sanitizer.access(_array(grad), where, writer, True, name)
