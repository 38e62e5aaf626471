"""Process groups: who takes part in a collective, on which backend, and the default group.

A `ProcessGroup` is the contract between the tensor-level functions (`api.py`) and a backend: it
runs collectives on contiguous host or device arrays and returns `Work` handles that its own
thread (never the caller's) settles. Each group numbers its collectives, so that a timeout can say
which collective of which group was left waiting and, under the launcher, which ranks never came.

The default group is per process for process backends (MPI, NCCL across processes) and per
context for the `threads` backend, whose ranks are threads of one process.
"""

from __future__ import annotations

import contextvars
import enum
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from .work import DistBackendError, Work

__all__ = [
    "DEFAULT_TIMEOUT",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "check_op_dtype",
    "describe_ranks",
]

#: PyTorch's default collective timeout (`torch.distributed.default_pg_timeout`).
DEFAULT_TIMEOUT = timedelta(minutes=30)


class ReduceOp(enum.Enum):
    """How `all_reduce`, `reduce` and `reduce_scatter` combine the ranks' values."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


def check_op_dtype(op: ReduceOp, dtype: Any) -> None:
    """Refuse an op that has no meaning for the dtype, before anything is sent."""
    kind = getattr(dtype, "kind", "")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "iub":
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and kind == "c":
        raise ValueError(f"ReduceOp.{op.name} is not defined for complex tensors")


def describe_ranks(ranks: Sequence[int]) -> str:
    """Ranks as a short text: `0-3` for a run, `0, 2, 5` otherwise."""
    ranks = list(ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(str(r) for r in ranks)


class ProcessGroup(ABC):
    """Ranks that run collectives together on one backend."""

    backend_name = "undefined"

    def __init__(
        self, rank: int, ranks: Sequence[int], name: str, timeout: timedelta = DEFAULT_TIMEOUT
    ) -> None:
        self._rank = rank
        self.ranks = list(ranks)  # the global ranks of the members, in group-rank order
        self.group_name = name
        self.timeout = timeout
        self._seq = 0
        self._seq_lock = threading.Lock()
        self.last_started: tuple[int, str] = (0, "")
        self.closed = False
        self.subgroups_made = 0

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """How many ranks the group has."""
        return len(self.ranks)

    def describe(self) -> str:
        """The group as errors name it: `group WORLD (mpi, ranks 0-2)`."""
        return f"group {self.group_name} ({self.backend_name}, ranks {describe_ranks(self.ranks)})"

    def next_collective(self, name: str) -> tuple[int, str]:
        """Number the next collective (the same on every rank: all call them in one order)."""
        if self.closed:
            raise DistBackendError(f"{name} on {self.describe()}: the process group was destroyed")
        with self._seq_lock:
            self._seq += 1
            self.last_started = (self._seq, name)
            return self._seq, f"{name} #{self._seq}"

    def check_size(self, n: int, what: str) -> None:
        """PyTorch's message for a list of tensors of the wrong length."""
        if n != self.size():
            raise ValueError(f"{what} must have {self.size()} entries, one per rank, got {n}")

    # ------------------------------------------------------ collectives on arrays
    @abstractmethod
    def allreduce(self, array: Any, op: ReduceOp, name: str, checked: bool = True) -> Work:
        """Reduce `array` (contiguous) over the ranks, in place on every rank (`checked=False`
        skips the exchange of shapes, for callers that know the ranks agree)."""

    @abstractmethod
    def broadcast(self, array: Any, src: int, name: str) -> Work:
        """Copy group rank `src`'s `array` into every rank's."""

    @abstractmethod
    def allgather(self, send: Any, recv: Any, name: str) -> Work:
        """Every rank's `send` into `recv[i]` of every rank (`recv` is (size, *send.shape))."""

    @abstractmethod
    def reduce_scatter(self, send: Any, recv: Any, op: ReduceOp, name: str) -> Work:
        """Reduce `send` ((size, *recv.shape)) over the ranks; rank i keeps part i in `recv`."""

    @abstractmethod
    def reduce(self, array: Any, dst: int, op: ReduceOp, name: str) -> Work:
        """Reduce `array` into group rank `dst`'s `array`."""

    @abstractmethod
    def gather(self, send: Any, recv: Any | None, dst: int, name: str) -> Work:
        """Every rank's `send` into `recv[i]` on group rank `dst` (None elsewhere)."""

    @abstractmethod
    def scatter(self, send: Any | None, recv: Any, src: int, name: str) -> Work:
        """Part i of `send` on group rank `src` into rank i's `recv`."""

    @abstractmethod
    def barrier(self, name: str) -> Work:
        """Done once every rank has entered the barrier."""

    def new_subgroup(self, ranks: Sequence[int], name: str, timeout: timedelta) -> Any:
        """The subgroup of global `ranks` (None on ranks outside it); every rank calls this."""
        raise NotImplementedError(f"the {self.backend_name} backend has no subgroups")

    def next_subgroup_name(self) -> str:
        """A name for the next `new_group` (the same on every rank: all call it in order)."""
        self.subgroups_made += 1
        return f"{self.group_name}.{self.subgroups_made}"

    def shutdown(self) -> None:
        """Release the backend's communicators and threads."""
        self.closed = True

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.describe()}, rank {self._rank}>"


class GroupMember:
    """PyTorch's markers: the default group (`WORLD`) and a rank outside a group."""

    WORLD: Any = None
    NON_GROUP_MEMBER = object()


class DefaultGroups:
    """The default group: per context (threads backend) over a per-process fallback."""

    def __init__(self) -> None:
        self.in_context: contextvars.ContextVar[ProcessGroup | None] = contextvars.ContextVar(
            "autograd_async_default_process_group", default=None
        )
        self.process: ProcessGroup | None = None
        self.lock = threading.Lock()

    def get(self) -> ProcessGroup | None:
        """This context's default group, else this process's, else None."""
        return self.in_context.get() or self.process


default_groups = DefaultGroups()
