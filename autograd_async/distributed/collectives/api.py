"""The collectives on tensors, with PyTorch's names and signatures (`torch.distributed`).

Each function checks its arguments, lays the tensors out as contiguous arrays (a tensor that is
not contiguous travels as a copy, written back when the collective is done), and hands them to
the group's backend. With `async_op=True` it returns the `Work` handle; otherwise it waits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, overload

from ...backends.registry import backends
from ...core.tensor import Tensor
from ...engine.engine import get_engine
from ...engine.trace_events import CollectiveSpan
from .process_group import GroupMember, ProcessGroup, ReduceOp, check_op_dtype, default_groups
from .work import Work, completed_work

__all__ = [
    "all_gather",
    "all_gather_into_tensor",
    "all_reduce",
    "barrier",
    "broadcast",
    "gather",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "resolve_group",
    "scatter",
]

NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def resolve_group(group: Any) -> ProcessGroup:
    """The group to run on: `group`, or the default group for None / `GroupMember.WORLD`."""
    if group is None or group is GroupMember.WORLD:
        found = default_groups.get()
        if found is None:
            raise ValueError(NOT_INITIALIZED)
        return found
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("this rank is not a member of the group")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


def _check_tensor(t: Any, name: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a Tensor, got {type(t).__name__}")
    return t


def _array(t: Tensor) -> Any:
    """The tensor's array, ready to travel (contiguous): its own or a copy."""
    data = t._data
    return data if data.flags.c_contiguous else data.copy()


def _write_back(t: Tensor, buffer: Any) -> Any:
    """A finisher that copies `buffer` into `t` unless it is `t`'s own array."""

    def finish() -> None:
        if buffer is not t._data:
            t._data[...] = buffer.reshape(t._data.shape)

    return finish


def _empty(like: Tensor, shape: tuple) -> Any:
    backend = backends.for_device(like.device)
    with backend.device_context(like.device):
        return backend.xp.empty(shape, dtype=like._data.dtype)


def _finish(work: Work, async_op: bool, nbytes: int = 0) -> Work | None:
    sink = get_engine().trace_sink
    if sink is not None:  # under the profiler: a slice on this rank's communication track
        _trace(sink, work, nbytes)
    if async_op:
        return work
    work.wait()
    return None


def _trace(sink: Any, work: Work, nbytes: int) -> None:
    started = time.perf_counter_ns()
    name, _, group = work.name.partition(" on ")
    rank = default_rank()

    def record() -> None:
        sink.record(
            CollectiveSpan(
                rank,
                group,
                name,
                started,
                work.completed_ns or time.perf_counter_ns(),
                nbytes,
                0,
                0,
            )
        )

    work.then(record)


def default_rank() -> int:
    """This rank in the default group (0 without one): the communication track's number."""
    found = default_groups.get()
    return found.rank() if found is not None else 0


def _group_rank(group: ProcessGroup, rank: int, what: str) -> int:
    try:
        return group.ranks.index(rank)
    except ValueError:
        raise ValueError(f"{what} rank {rank} is not part of {group.describe()}") from None


def _check_op(op: Any, tensor: Tensor) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ReduceOp, got {op!r}")
    check_op_dtype(op, tensor._data.dtype)
    return op


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Reduce `tensor` over every rank of the group, in place on each."""
    _check_tensor(tensor, "tensor")
    pg, op = resolve_group(group), _check_op(op, tensor)
    buffer = _array(tensor)
    tensor._bump_version()
    work = pg.allreduce(buffer, op, "all_reduce")
    return _finish(work.then(_write_back(tensor, buffer)), async_op, buffer.nbytes)


@overload
def broadcast(
    tensor: Tensor,
    src: int | None = ...,
    group: Any = ...,
    *,
    async_op: Literal[True],
    group_src: int | None = ...,
) -> Work: ...
@overload
def broadcast(
    tensor: Tensor,
    src: int | None = ...,
    group: Any = ...,
    async_op: bool = ...,
    group_src: int | None = ...,
) -> Work | None: ...
def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copy rank `src`'s `tensor` into every other rank's."""
    _check_tensor(tensor, "tensor")
    pg = resolve_group(group)
    root = group_src if group_src is not None else _group_rank(pg, src or 0, "src")
    buffer = _array(tensor)
    if pg.rank() != root:
        tensor._bump_version()
    work = pg.broadcast(buffer, root, "broadcast")
    return _finish(work.then(_write_back(tensor, buffer)), async_op, buffer.nbytes)


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every rank's `tensor` into `tensor_list[rank]` on every rank."""
    _check_tensor(tensor, "tensor")
    pg = resolve_group(group)
    pg.check_size(len(tensor_list), "tensor_list")
    for i, out in enumerate(tensor_list):
        _check_tensor(out, f"tensor_list[{i}]")
        if out.shape != tensor.shape or out._data.dtype != tensor._data.dtype:
            raise ValueError(
                f"tensor_list[{i}] has shape {tuple(out.shape)} and dtype {out.dtype}, "
                f"but the input tensor has {tuple(tensor.shape)} and {tensor.dtype}"
            )
    received = _empty(tensor, (pg.size(), *tensor.shape))
    work = pg.allgather(_array(tensor), received, "all_gather")

    def finish() -> None:
        for i, out in enumerate(tensor_list):
            out._data[...] = received[i]

    for out in tensor_list:
        out._bump_version()
    return _finish(work.then(finish), async_op)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every rank's `input_tensor`, concatenated (or stacked) by rank into `output_tensor`."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = resolve_group(group)
    if output_tensor.numel() != pg.size() * input_tensor.numel():
        raise ValueError(
            f"output tensor must have {pg.size()} times the input's elements "
            f"({pg.size() * input_tensor.numel()}), got {output_tensor.numel()}"
        )
    buffer = _array(output_tensor)
    received = buffer.reshape(pg.size(), *input_tensor.shape)
    output_tensor._bump_version()
    work = pg.allgather(_array(input_tensor), received, "all_gather_into_tensor")
    return _finish(work.then(_write_back(output_tensor, buffer)), async_op)


def reduce_scatter(
    output: Tensor,
    input_list: list[Tensor],
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce `input_list[i]` over the ranks into rank i's `output`."""
    _check_tensor(output, "output")
    pg, op = resolve_group(group), _check_op(op, output)
    pg.check_size(len(input_list), "input_list")
    xp = backends.for_device(output.device).xp
    send = xp.stack([_check_tensor(t, "input_list entry")._data for t in input_list])
    buffer = _array(output)
    output._bump_version()
    work = pg.reduce_scatter(send, buffer, op, "reduce_scatter")
    return _finish(work.then(_write_back(output, buffer)), async_op)


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce `input` (the ranks' parts, concatenated) over the ranks; rank i keeps part i."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg, op = resolve_group(group), _check_op(op, output)
    if input.numel() != pg.size() * output.numel():
        raise ValueError(
            f"input tensor must have {pg.size()} times the output's elements "
            f"({pg.size() * output.numel()}), got {input.numel()}"
        )
    send = _array(input).reshape(pg.size(), *output.shape)
    buffer = _array(output)
    output._bump_version()
    work = pg.reduce_scatter(send, buffer, op, "reduce_scatter_tensor")
    return _finish(work.then(_write_back(output, buffer)), async_op)


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Reduce `tensor` over the ranks into rank `dst`'s `tensor`."""
    _check_tensor(tensor, "tensor")
    pg, op = resolve_group(group), _check_op(op, tensor)
    root = group_dst if group_dst is not None else _group_rank(pg, dst or 0, "dst")
    buffer = _array(tensor)
    work = pg.reduce(buffer, root, op, "reduce")
    if pg.rank() == root:
        tensor._bump_version()
        work.then(_write_back(tensor, buffer))
    return _finish(work, async_op)


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Every rank's `tensor` into `gather_list` on rank `dst`."""
    _check_tensor(tensor, "tensor")
    pg = resolve_group(group)
    root = group_dst if group_dst is not None else _group_rank(pg, dst or 0, "dst")
    received = None
    targets: list[Tensor] = []  # the root's gather_list
    if pg.rank() == root:
        if gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        pg.check_size(len(gather_list), "gather_list")
        received = _empty(tensor, (pg.size(), *tensor.shape))
        targets = gather_list
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    work = pg.gather(_array(tensor), received, root, "gather")
    if received is not None:

        def finish() -> None:
            for i, out in enumerate(targets):
                out._data[...] = received[i].reshape(out._data.shape)

        for out in targets:
            out._bump_version()
        work.then(finish)
    return _finish(work, async_op)


def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Part `rank` of `scatter_list` on rank `src` into every rank's `tensor`."""
    _check_tensor(tensor, "tensor")
    pg = resolve_group(group)
    root = group_src if group_src is not None else _group_rank(pg, src or 0, "src")
    send = None
    if pg.rank() == root:
        if scatter_list is None:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        pg.check_size(len(scatter_list), "scatter_list")
        xp = backends.for_device(tensor.device).xp
        send = xp.stack([_check_tensor(t, "scatter_list entry")._data for t in scatter_list])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    buffer = _array(tensor)
    tensor._bump_version()
    work = pg.scatter(send, buffer, root, "scatter")
    return _finish(work.then(_write_back(tensor, buffer)), async_op)


def barrier(
    group: Any = None, async_op: bool = False, device_ids: Sequence[int] | None = None
) -> Work | None:
    """Wait until every rank of the group has entered the barrier."""
    pg = resolve_group(group)
    if pg.size() == 1:
        return _finish(completed_work("barrier"), async_op)
    return _finish(pg.barrier("barrier"), async_op)
