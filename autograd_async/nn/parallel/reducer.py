"""The gradient reducer of `DistributedDataParallel`: buckets, readiness, launch, finalize.

Parameters are grouped into buckets in reverse registration order (gradients arrive roughly in
that order during backward), at most `bucket_cap_mb` each (the first one 1 MiB, so communication
starts early), one dtype and device per bucket. Each parameter's post-accumulate-grad hook marks
it ready; a bucket whose parameters are all ready copies their gradients into its flat buffer and
launches an asynchronous all_reduce (AVG) at once, while the rest of backward runs on. Buckets
are launched in their order on every rank, so the ranks' collectives always match. When the last
bucket is launched, the hook that launched it waits for them all (on the device's worker thread,
never the caller's loop) and writes the averages into `.grad`; so `backward()` and `await
backward_async()` return with every gradient reduced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backends.registry import backends
from ...core.tensor import Tensor
from ...distributed.collectives.process_group import ReduceOp
from ...engine.engine import get_engine
from ...engine.trace_events import CollectiveSpan
from ..parameter import Parameter

__all__ = ["Bucket", "BucketTimeline", "Reducer", "assign_buckets"]

FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's _DEFAULT_FIRST_BUCKET_BYTES


def assign_buckets(
    params: Sequence[Parameter], cap_bytes: int, first_cap_bytes: int = FIRST_BUCKET_BYTES
) -> list[list[int]]:
    """Parameter indices per bucket: reverse registration order, one dtype and device each."""
    buckets: list[list[int]] = []
    open_by_kind: dict[tuple, tuple[list[int], int]] = {}
    for index in reversed(range(len(params))):
        p = params[index]
        kind = (str(p.dtype), str(p.device))
        members, size = open_by_kind.get(kind, ([], 0))
        members.append(index)
        size += p.numel() * p._data.dtype.itemsize
        cap = min(first_cap_bytes, cap_bytes) if not buckets else cap_bytes
        if size >= cap:
            buckets.append(members)
            open_by_kind.pop(kind, None)
        else:
            open_by_kind[kind] = (members, size)
    buckets.extend(members for members, _ in open_by_kind.values() if members)
    return buckets


class BucketTimeline:
    """When each bucket's all_reduce ran in the last iteration, against when backward ended.

    `spans` holds (launched_ns, completed_ns) per bucket (perf_counter_ns; completed is when the
    backend settled the collective); `backward_done_ns` is when the last gradient was accumulated.
    Communication before that moment ran while backward still had work to do: it is hidden.
    """

    __slots__ = ("spans", "backward_done_ns")

    def __init__(self, spans: list[tuple[int, int]], backward_done_ns: int) -> None:
        self.spans = spans
        self.backward_done_ns = backward_done_ns

    def communication_ns(self) -> int:
        """Time with at least one bucket in flight (the union of the spans)."""
        return sum(stop - start for start, stop in merged(self.spans))

    def hidden_ns(self) -> int:
        """The part of `communication_ns` that fell before backward ended."""
        end = self.backward_done_ns
        return sum(max(0, min(stop, end) - start) for start, stop in merged(self.spans))

    def hidden_share(self) -> float:
        """hidden / communication, 0..1 (1.0 when there was no communication to hide)."""
        total = self.communication_ns()
        return self.hidden_ns() / total if total else 1.0


def merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping intervals joined, in order."""
    out: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


class Bucket:
    """Parameters reduced together: their flat buffer and where each one lies in it."""

    __slots__ = (
        "index",
        "members",
        "offsets",
        "buffer",
        "pending",
        "work",
        "device",
        "launched_ns",
        "source_node_id",
        "source_ns",
    )

    def __init__(self, index: int, members: list[int], params: Sequence[Parameter]) -> None:
        self.index = index
        self.members = members
        self.device = params[members[0]].device
        self.offsets: list[tuple[int, int]] = []
        at = 0
        for i in members:
            n = params[i].numel()
            self.offsets.append((at, at + n))
            at += n
        backend = backends.for_device(self.device)
        with backend.device_context(self.device):
            self.buffer = backend.xp.zeros(at, dtype=params[members[0]]._data.dtype)
        self.pending = len(members)
        self.work: Any = None
        self.launched_ns = self.source_ns = self.source_node_id = 0

    def slot(self, position: int) -> Any:
        start, stop = self.offsets[position]
        return self.buffer[start:stop]


class Reducer:
    """Readiness by counting: a bucket launches when its count of pending gradients is zero."""

    def __init__(
        self,
        params: Sequence[Parameter],
        group: Any,
        cap_bytes: int,
        find_unused: bool,
        as_bucket_view: bool,
    ) -> None:
        self.params = list(params)
        self.group = group
        self.find_unused = find_unused
        self.as_bucket_view = as_bucket_view
        self.buckets = [
            Bucket(b, members, self.params)
            for b, members in enumerate(assign_buckets(self.params, cap_bytes))
        ]
        self.where = {}  # param index -> (bucket, position in bucket)
        for bucket in self.buckets:
            for position, i in enumerate(bucket.members):
                self.where[i] = (bucket, position)
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        self.expect_hooks = False
        self.require_finalize = False
        self.unused: list[int] = []
        self.marked_unused = False
        self.used_work: Any = None
        self.used_map: Any = None
        self.last_timeline: BucketTimeline | None = None
        self.lock = threading.Lock()
        self.handles = [
            p.register_post_accumulate_grad_hook(self.hook_for(i))
            for i, p in enumerate(self.params)
        ]

    # ------------------------------------------------------------------ forward
    def prepare_for_forward(self) -> None:
        """Refuse a new iteration while the last one's reduction is unfinished (as PyTorch)."""
        if self.require_finalize:
            missing = [i for i, r in enumerate(self.ready) if not r]
            rank = self.group.rank()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
                "`forward` function outputs participate in calculating loss. \nIf you already "
                "have done the above, then the distributed data parallel module wasn't able to "
                "locate the output tensors in the return value of your module's `forward` "
                "function. Please include the loss function and the structure of the return "
                "value of `forward` of your module when reporting this issue (e.g. list, dict, "
                "iterable).\nParameter indices which did not receive grad for rank "
                f"{rank}: {' '.join(str(i) for i in missing)}"
            )

    def prepare_for_backward(self, outputs: Any) -> None:
        """Arm the hooks for the coming backward; find the unused parameters if asked."""
        self.ready = [False] * len(self.params)
        for bucket in self.buckets:
            bucket.pending = len(bucket.members)
            bucket.work = None
        self.next_bucket = 0
        self.expect_hooks = True
        self.marked_unused = False
        self.unused = []
        self.used_work = None
        if self.find_unused:
            reached = reachable_leaves(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]

    # ------------------------------------------------------------------ backward
    def hook_for(self, index: int) -> Any:
        def hook(_param: Tensor) -> None:
            if self.expect_hooks:
                self.mark_ready(index)

        # The last one waits for the all-reduces: on a worker thread, never a caller's loop.
        hook.waits_on_other_threads = True  # type: ignore[attr-defined]
        return hook

    def mark_ready(self, index: int) -> None:
        """A gradient is accumulated: count it; launch the buckets that are complete."""
        # Parameters on several devices are accumulated on several worker threads at once.
        with self.lock:
            if self.ready[index]:
                raise RuntimeError(
                    "Expected to mark a variable ready only once. This error is caused by one "
                    "of the following reasons: 1) Use of a module parameter outside the "
                    "`forward` function. 2) Reused parameters in multiple reentrant backward "
                    f"passes. Parameter at index {index} has been marked as ready twice."
                )
            self.require_finalize = True
            if self.find_unused and not self.marked_unused:
                self.marked_unused = True
                self.launch_used_map()
                for i in self.unused:
                    self.count_ready(i)
            self.count_ready(index)
            last = self.next_bucket == len(self.buckets) and self.expect_hooks
            if last:
                self.expect_hooks = False
        if last:
            self.finalize()

    def count_ready(self, index: int) -> None:
        self.ready[index] = True
        bucket, _ = self.where[index]
        bucket.pending -= 1
        if bucket.pending == 0:  # this gradient completed the bucket: the trace's flow source
            accumulator = self.params[index]._grad_accumulator
            node = accumulator() if accumulator is not None else None
            bucket.source_node_id = id(node) if node is not None else 0
            bucket.source_ns = time.perf_counter_ns()
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self.launch(self.buckets[self.next_bucket])
            self.next_bucket += 1

    def launch(self, bucket: Bucket) -> None:
        """Copy the bucket's gradients into its buffer and start its all_reduce."""
        for position, i in enumerate(bucket.members):
            grad = self.params[i].grad
            slot = bucket.slot(position)
            if grad is None:
                slot[...] = 0
            elif grad._data is not slot:
                slot[...] = grad._data.reshape(-1)
        bucket.launched_ns = time.perf_counter_ns()
        bucket.work = self.group.allreduce(
            bucket.buffer, ReduceOp.AVG, "ddp_bucket_all_reduce", checked=False
        )

    def launch_used_map(self) -> None:
        """Which ranks used each parameter (PyTorch's local_used_map, reduced with MAX)."""
        device = self.params[0].device  # the nccl backend reduces device memory only
        backend = backends.for_device(device)
        with backend.device_context(device):
            used = np.ones(len(self.params), dtype=np.int32)
            used[self.unused] = 0
            self.used_map = backend.xp.asarray(used)
        self.used_work = self.group.allreduce(
            self.used_map, ReduceOp.MAX, "ddp_used_map", checked=False
        )

    def finalize(self) -> None:
        """Wait for every bucket and write the averaged gradients into `.grad`."""
        backward_done_ns = time.perf_counter_ns()
        globally_unused: set[int] = set()
        if self.used_work is not None:
            self.used_work.wait()
            globally_unused = {i for i, used in enumerate(self.used_map.tolist()) if not used}
        sink = get_engine().trace_sink
        for bucket in self.buckets:
            bucket.work.wait()
            if sink is not None:
                self.record(sink, bucket)
            for position, i in enumerate(bucket.members):
                if i in globally_unused:
                    continue
                self.write_grad(self.params[i], bucket.slot(position))
        self.last_timeline = BucketTimeline(
            [(b.launched_ns, b.work.completed_ns or backward_done_ns) for b in self.buckets],
            backward_done_ns,
        )
        self.require_finalize = False

    def record(self, sink: Any, bucket: Bucket) -> None:
        """The bucket's all_reduce on this rank's communication track of the profiler."""
        sink.record(
            CollectiveSpan(
                self.group.rank(),
                self.group.describe(),
                f"all_reduce bucket {bucket.index}",
                bucket.launched_ns,
                bucket.work.completed_ns or time.perf_counter_ns(),
                bucket.buffer.nbytes,
                bucket.source_node_id,
                bucket.source_ns,
            )
        )

    def write_grad(self, param: Parameter, slot: Any) -> None:
        grad = param.grad
        view = slot.reshape(param._data.shape)
        if self.as_bucket_view:
            param.grad = Tensor._wrap(view, param.device)
        elif grad is None:
            param.grad = Tensor._wrap(view.copy(), param.device)
        else:
            grad._data[...] = view
            grad._bump_version()

    def remove_hooks(self) -> None:
        for handle in self.handles:
            handle.remove()


def reachable_leaves(outputs: Any) -> set[int]:
    """ids of the leaves whose accumulators the outputs' graphs reach (no recursion)."""
    tensors, stack = [], [outputs]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            tensors.append(item)
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    seen: set[int] = set()
    reached: set[int] = set()
    nodes = [t.grad_fn for t in tensors if t.grad_fn is not None]
    for t in tensors:
        if t.grad_fn is None and t.requires_grad:
            reached.add(id(t))
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
        for nxt in node._edges[::2]:
            if nxt is not None and id(nxt) not in seen:
                nodes.append(nxt)
    return reached
