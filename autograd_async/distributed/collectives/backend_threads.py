"""The `threads` backend: ranks that are threads of one process (replicas on cpu or sim devices).

Ranks meet in a `HashStore` (PyTorch's in-process store). A collective is a round of the group:
each rank hands in its arrays and a `Work`; when the last rank arrives, the group's combiner
thread (never a caller's thread or event loop) combines them and writes every rank's result, then
settles all the handles. A round that is not complete by its deadline fails on every rank that
came, naming the ranks that did not; ranks that disagree on sizes or dtypes fail alike.
"""

from __future__ import annotations

import heapq
import queue
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from .process_group import DEFAULT_TIMEOUT, ProcessGroup, ReduceOp, describe_ranks
from .work import DistBackendError, ShapeMismatchError, Work

__all__ = ["HashStore", "ThreadProcessGroup"]

# Each reduces the ranks' arrays stacked along a new first axis.
REDUCERS: dict[ReduceOp, Callable[[np.ndarray], np.ndarray]] = {
    ReduceOp.SUM: lambda xs: np.sum(xs, axis=0, dtype=xs[0].dtype),
    ReduceOp.AVG: lambda xs: np.sum(xs, axis=0, dtype=xs[0].dtype),
    ReduceOp.PRODUCT: lambda xs: np.prod(xs, axis=0, dtype=xs[0].dtype),
    ReduceOp.MIN: lambda xs: np.min(xs, axis=0),
    ReduceOp.MAX: lambda xs: np.max(xs, axis=0),
    ReduceOp.BAND: lambda xs: np.bitwise_and.reduce(xs, axis=0),
    ReduceOp.BOR: lambda xs: np.bitwise_or.reduce(xs, axis=0),
    ReduceOp.BXOR: lambda xs: np.bitwise_xor.reduce(xs, axis=0),
}


def combine(arrays: list[np.ndarray], op: ReduceOp) -> np.ndarray:
    """The reduction of the ranks' arrays with PyTorch's rules for `op`."""
    stacked = np.stack(arrays)
    dtype = stacked.dtype
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "iub":
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and dtype.kind == "c":
        raise ValueError(f"ReduceOp.{op.name} is not defined for complex tensors")
    if dtype == np.bool_:
        op = {
            ReduceOp.SUM: ReduceOp.MAX,
            ReduceOp.AVG: ReduceOp.MAX,
            ReduceOp.PRODUCT: ReduceOp.MIN,
        }.get(op, op)
    out = REDUCERS[op](stacked)
    if op is ReduceOp.AVG:
        out = out / len(arrays) if dtype.kind in "fc" else np.trunc(out / len(arrays))
    return np.asarray(out).astype(dtype, copy=False)


class Round:
    """One collective of the group: what each rank handed in."""

    __slots__ = ("label", "entries", "names", "works", "deadline", "combine")

    def __init__(self, label: str, deadline: float, combine: Callable) -> None:
        self.label = label
        self.entries: dict[int, Any] = {}
        self.names: dict[int, str] = {}
        self.works: dict[int, Work] = {}
        self.deadline = deadline
        self.combine = combine


class ThreadWorld:
    """The shared side of a threads group: its open rounds and its combiner thread."""

    def __init__(self, size: int, ranks: Sequence[int], name: str) -> None:
        self.size = size
        self.ranks = list(ranks)
        self.name = name
        self.rounds: dict[int, Round] = {}
        self.lock = threading.Lock()
        self.ready: queue.SimpleQueue[Round | None] = queue.SimpleQueue()
        self.deadlines: list[tuple[float, int]] = []
        self.broken: str | None = None
        self.subgroups: dict[tuple, ThreadWorld] = {}
        self.thread = threading.Thread(
            target=self.run, name=f"autograd-async:threads-{name}", daemon=True
        )
        self.thread.start()

    def arrive(
        self,
        seq: int,
        rank: int,
        label: str,
        entry: Any,
        work: Work,
        timeout: float,
        combiner: Callable,
    ) -> None:
        """Hand in one rank's part of collective `seq`; the last one queues the round."""
        with self.lock:
            if self.broken is not None:
                work.set_exception(DistBackendError(f"{label}: {self.broken}"))
                return
            found = self.rounds.get(seq)
            if found is None:
                found = self.rounds[seq] = Round(label, time.monotonic() + timeout, combiner)
                heapq.heappush(self.deadlines, (found.deadline, seq))
            found.entries[rank] = entry
            found.names[rank] = label.split(" #", 1)[0]
            found.works[rank] = work
            if len(found.entries) == self.size:
                del self.rounds[seq]
                self.ready.put(found)

    def run(self) -> None:
        while True:
            try:
                ready = self.ready.get(timeout=self.next_wait())
            except queue.Empty:
                self.expire()
                continue
            if ready is None:
                return
            try:
                if len(set(ready.names.values())) > 1:
                    raise DistBackendError(
                        "the ranks called different collectives ("
                        + ", ".join(
                            f"rank {self.ranks[r]} called {n}"
                            for r, n in sorted(ready.names.items())
                        )
                        + ")"
                    )
                ready.combine(ready.entries)
            except BaseException as exc:  # noqa: BLE001 - every rank's handle fails with it
                kind = type(exc) if isinstance(exc, DistBackendError) else DistBackendError
                for work in ready.works.values():
                    work.set_exception(kind(f"{ready.label}: {exc}"))
                continue
            for work in ready.works.values():
                work.set_result(None)

    def next_wait(self) -> float:
        with self.lock:
            if not self.deadlines:
                return 0.5
            return max(0.0, min(0.5, self.deadlines[0][0] - time.monotonic()))

    def expire(self) -> None:
        """Fail the rounds past their deadline on the ranks that came, naming the others."""
        now = time.monotonic()
        with self.lock:
            while self.deadlines and self.deadlines[0][0] <= now:
                _, seq = heapq.heappop(self.deadlines)
                late = self.rounds.pop(seq, None)
                if late is None:
                    continue
                missing = [self.ranks[r] for r in range(self.size) if r not in late.entries]
                error = DistBackendError(
                    f"{late.label} timed out; missing ranks: {describe_ranks(missing)}"
                )
                self.broken = f"the group is unusable after an earlier failure: {error}"
                for work in late.works.values():
                    work.set_exception(error)

    def fail(self, reason: str) -> None:
        """Fail every open round and every later one (a rank of the group raised)."""
        with self.lock:
            self.broken = reason
            for late in self.rounds.values():
                for work in late.works.values():
                    work.set_exception(DistBackendError(f"{late.label}: {reason}"))
            self.rounds.clear()


class HashStore:
    """PyTorch's in-process key-value store; here also where thread ranks meet."""

    def __init__(self) -> None:
        self.data: dict[str | tuple[str, str], Any] = {}  # tuple keys: the groups' worlds
        self.lock = threading.Lock()

    def set(self, key: str, value: Any) -> None:
        """Store `value` under `key`."""
        with self.lock:
            self.data[key] = value

    def get(self, key: str) -> Any:
        """The value stored under `key`."""
        with self.lock:
            return self.data[key]

    def world(self, name: str, size: int, ranks: Sequence[int]) -> ThreadWorld:
        """The shared state of group `name`, made by the first rank that asks."""
        with self.lock:
            world = self.data.get(("world", name))
            if world is None:
                world = self.data[("world", name)] = ThreadWorld(size, ranks, name)
            elif world.size != size:
                raise ValueError(f"group {name} has {world.size} ranks, not {size}")
            return world


class ThreadProcessGroup(ProcessGroup):
    """A group of threads of this process, each one rank."""

    backend_name = "threads"

    def __init__(
        self,
        store: HashStore,
        rank: int,
        world_size: int,
        name: str = "WORLD",
        timeout: timedelta = DEFAULT_TIMEOUT,
        ranks: Sequence[int] | None = None,
    ) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside 0..{world_size - 1}")
        members = list(ranks) if ranks is not None else list(range(world_size))
        super().__init__(rank, members, name, timeout)
        self.store = store
        self.world = store.world(name, world_size, members)

    def _round(self, name: str, entry: Any, combiner: Callable) -> Work:
        parts = entry if isinstance(entry, tuple) else (entry,)
        if any(p is not None and not isinstance(p, np.ndarray) for p in parts):
            raise TypeError(
                f"{name}: the threads backend reduces host arrays (cpu and sim tensors); "
                "use backend='nccl' for cuda tensors"
            )
        seq, label = self.next_collective(name)
        work = Work(f"{label} on {self.describe()}")
        self.world.arrive(
            seq, self.rank(), work.name, entry, work, self.timeout.total_seconds(), combiner
        )
        return work

    def fail_pending(self, reason: str) -> None:
        """Fail this group's open and later collectives."""
        self.world.fail(reason)

    # --------------------------------------------------------------- collectives
    def allreduce(
        self, array: Any, op: ReduceOp, name: str = "all_reduce", checked: bool = True
    ) -> Work:
        def run(entries: dict) -> None:
            arrays = _same_layout(entries, name)
            result = combine(arrays, op)
            for out in arrays:
                np.copyto(out, result)

        return self._round(name, array, run)

    def broadcast(self, array: Any, src: int, name: str = "broadcast") -> Work:
        def run(entries: dict) -> None:
            arrays = _same_layout(entries, name)
            for out in arrays:
                if out is not arrays[src]:
                    np.copyto(out, arrays[src])

        return self._round(name, array, run)

    def allgather(self, send: Any, recv: Any, name: str = "all_gather") -> Work:
        def run(entries: dict) -> None:
            sends = _same_layout({r: e[0] for r, e in entries.items()}, name)
            for _, out in entries.values():
                for i, part in enumerate(sends):
                    np.copyto(out[i, ...], part)

        return self._round(name, (send, recv), run)

    def reduce_scatter(
        self, send: Any, recv: Any, op: ReduceOp, name: str = "reduce_scatter"
    ) -> Work:
        def run(entries: dict) -> None:
            sends = _same_layout({r: e[0] for r, e in entries.items()}, name)
            result = combine(sends, op)
            for r, (_, out) in entries.items():
                np.copyto(out, result[r].reshape(out.shape))

        return self._round(name, (send, recv), run)

    def reduce(self, array: Any, dst: int, op: ReduceOp, name: str = "reduce") -> Work:
        def run(entries: dict) -> None:
            arrays = _same_layout(entries, name)
            np.copyto(arrays[dst], combine(arrays, op))

        return self._round(name, array, run)

    def gather(self, send: Any, recv: Any, dst: int, name: str = "gather") -> Work:
        def run(entries: dict) -> None:
            sends = _same_layout({r: e[0] for r, e in entries.items()}, name)
            out = entries[dst][1]
            for i, part in enumerate(sends):
                np.copyto(out[i, ...], part)

        return self._round(name, (send, recv), run)

    def scatter(self, send: Any, recv: Any, src: int, name: str = "scatter") -> Work:
        def run(entries: dict) -> None:
            recvs = _same_layout({r: e[1] for r, e in entries.items()}, name)
            parts = entries[src][0]
            for i, out in enumerate(recvs):
                np.copyto(out, parts[i].reshape(out.shape))

        return self._round(name, (send, recv), run)

    def barrier(self, name: str = "barrier") -> Work:
        return self._round(name, None, lambda entries: None)

    def new_subgroup(self, ranks: Sequence[int], name: str, timeout: timedelta) -> Any:
        """The threads group of global `ranks` (None on other ranks)."""
        me = self.ranks[self.rank()]
        if me not in ranks:
            return None
        return ThreadProcessGroup(
            self.store, list(ranks).index(me), len(ranks), name, timeout, ranks
        )

    def shutdown(self) -> None:
        super().shutdown()


def _same_layout(entries: dict, name: str) -> list[np.ndarray]:
    """The ranks' arrays in rank order, after checking that sizes and dtypes agree."""
    arrays = [np.asarray(entries[r]) for r in sorted(entries)]
    first = arrays[0]
    if any(a.size != first.size or a.dtype != first.dtype for a in arrays):
        shapes = ", ".join(
            f"rank {r}: {a.size} elements of {a.dtype}" for r, a in enumerate(arrays)
        )
        raise ShapeMismatchError(
            f"the ranks passed tensors of different sizes or dtypes ({shapes})"
        )
    return [a.reshape(first.shape) if a.shape != first.shape else a for a in arrays]
