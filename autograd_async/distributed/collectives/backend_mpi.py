"""The `mpi` backend: collectives over mpi4py's non-blocking requests on a progress thread.

Every MPI call of the process is made on one progress thread (so MPI needs no more than
`MPI_THREAD_SERIALIZED`, and the callers' threads and event loops never run communication). A
collective is a generator of steps: it starts a request (`Iallreduce`, `Ibcast`, ...), yields it,
and continues when the progress thread sees the request complete (`Testsome` over all requests in
flight), so many collectives travel at once. Before its data a collective exchanges each rank's
element count and dtype (one small `Iallgather`), so ranks that disagree get an error naming
every rank's shape instead of a truncated message or a hang.

mpi4py is imported here only, when the backend is first used.
"""

from __future__ import annotations

import heapq
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from . import supervision
from .process_group import DEFAULT_TIMEOUT, ProcessGroup, ReduceOp
from .work import DistBackendError, ShapeMismatchError, Work

__all__ = ["MpiProcessGroup", "import_mpi"]


def import_mpi() -> Any:
    """mpi4py's MPI module (initialising MPI), with an install hint when it is missing."""
    try:
        from mpi4py import MPI  # noqa: PLC0415 - optional dependency, loaded on first use
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "the mpi backend needs mpi4py and an MPI library: pip install 'autograd-async[mpi]'"
        ) from exc
    return MPI


def mpi_op(MPI: Any, op: ReduceOp, dtype: np.dtype) -> Any:
    """The MPI reduction for `op` on `dtype` (AVG sums; the caller divides)."""
    if dtype == np.bool_:  # reduced as uint8: a sum or max is a logical or
        return {
            ReduceOp.PRODUCT: MPI.MIN,
            ReduceOp.MIN: MPI.MIN,
            ReduceOp.BAND: MPI.BAND,
            ReduceOp.BXOR: MPI.BXOR,
        }.get(op, MPI.MAX)
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "iu":
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and dtype.kind == "c":
        raise ValueError(f"ReduceOp.{op.name} is not defined for complex tensors")
    return {
        ReduceOp.SUM: MPI.SUM,
        ReduceOp.AVG: MPI.SUM,
        ReduceOp.PRODUCT: MPI.PROD,
        ReduceOp.MIN: MPI.MIN,
        ReduceOp.MAX: MPI.MAX,
        ReduceOp.BAND: MPI.BAND,
        ReduceOp.BOR: MPI.BOR,
        ReduceOp.BXOR: MPI.BXOR,
    }[op]


def wire_view(array: np.ndarray) -> np.ndarray:
    """The array as MPI can send it: bool as uint8, other dtypes MPI lacks as their bytes."""
    if array.dtype == np.bool_:
        return array.view(np.uint8)
    return array


def finish_average(array: np.ndarray, size: int) -> None:
    """Turn a sum into PyTorch's AVG (integers divide with truncation, as NCCL's average)."""
    if array.dtype == np.bool_:  # reduced as a logical or already
        return
    if array.dtype.kind in "fc":
        array /= size
    else:
        np.copyto(array, np.trunc(array / size).astype(array.dtype))


class Job:
    """One collective on the progress thread: an optional shape check, then its data request.

    MPI needs the collectives of a communicator started in the same order on every rank. Shape
    checks run on a communicator of their own, started as jobs arrive (in collective order);
    data requests are started strictly in collective order (`Lane`), whatever order the checks
    complete in on each rank.
    """

    __slots__ = (
        "work",
        "deadline",
        "group",
        "seq",
        "signature",
        "data",
        "after",
        "request",
        "order",
        "phase",
    )

    def __init__(
        self,
        work: Work,
        group: MpiProcessGroup,
        seq: int,
        signature: tuple | None,
        data: Callable[[], Any],
        after: Callable[[], None] | None = None,
    ) -> None:
        self.work = work
        self.group = group
        self.seq = seq
        # (element count, dtype) as given, then the (mine, everyone) arrays of its check.
        self.signature: Any = signature
        self.data = data
        self.after = after
        self.deadline = time.monotonic() + group.timeout.total_seconds()
        self.request: Any = None
        self.order = 0
        self.phase = "new"  # new -> check -> queued -> data -> done


class Lane:
    """A group's data requests, started in collective order: the next number and who waits."""

    __slots__ = ("next_seq", "waiting")

    def __init__(self) -> None:
        self.next_seq = 1
        self.waiting: dict[int, Job] = {}


class ProgressThread:
    """The one thread that makes MPI calls: it starts queued collectives and completes them."""

    # Polling yields (sleep(0)) between polls, then backs off to short sleeps when nothing
    # completes for a while: a spinning thread would take a core from backward on a machine
    # with as many ranks as cores, yet a large message needs many progress calls (50 us sleeps
    # measured ~15% faster DDP steps than 500 us on 2 ranks of a 2-core machine).
    MAX_SLEEP = float(os.environ.get("AUTOGRAD_ASYNC_MPI_MAX_SLEEP", "0.00005"))
    SPIN_POLLS = int(os.environ.get("AUTOGRAD_ASYNC_MPI_SPIN_POLLS", "200"))

    def __init__(self, MPI: Any) -> None:
        self.MPI = MPI
        self.incoming: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self.active: list[Job] = []
        self.deadlines: list[tuple[float, int, Job]] = []
        self.counter = itertools.count()
        self.thread = threading.Thread(
            target=self.run, name="autograd-async:mpi-progress", daemon=True
        )
        self.thread.start()

    def submit(self, job: Job) -> None:
        """Queue a collective; its requests are started on the progress thread."""
        self.incoming.put(job)

    def stop(self) -> None:
        """End the thread once what is queued has started (pending requests are abandoned)."""
        self.incoming.put(None)
        self.thread.join(5.0)

    def run(self) -> None:
        idle_polls = 0
        while True:
            block = not self.active
            try:
                job = self.incoming.get(timeout=0.5) if block else self.incoming.get_nowait()
                while True:
                    if job is None:
                        self.fail_all("the process group was destroyed")
                        return
                    heapq.heappush(self.deadlines, (job.deadline, next(self.counter), job))
                    self.advance(job)
                    job = self.incoming.get_nowait()
            except queue.Empty:
                pass
            if self.poll():
                idle_polls = 0
            else:
                idle_polls += 1
                # sleep(0) yields the GIL and the core; real sleeps only after a long wait.
                time.sleep(
                    0
                    if idle_polls < self.SPIN_POLLS
                    else min(self.MAX_SLEEP, 1e-6 * (idle_polls - self.SPIN_POLLS))
                )
            self.expire()

    def advance(self, job: Job) -> None:
        """Move the job on: start its check, queue or start its data, or settle it."""
        try:
            if job.phase == "new" and job.work.is_completed():  # failed before it started
                job.phase = "queued"
                self.queue_data(job)
                return
            if job.phase == "new" and job.signature is not None and job.group.check_shapes:
                job.phase = "check"
                job.request = job.group.start_check(job)
                self.activate(job)
                return
            if job.phase in ("new", "check"):
                if job.phase == "check":
                    job.group.verify_check(job)
                job.phase = "queued"
                self.queue_data(job)
                return
            if job.phase == "data":
                job.phase = "done"
                if job.after is not None:
                    job.after()
                job.work.set_result(None)
        except BaseException as exc:  # noqa: BLE001 - the collective's error, for its waiters
            if isinstance(exc, ShapeMismatchError):  # found before any data moved
                job.phase = "queued"
                self.skip_data(job)
            else:
                job.group.broken = job.group.broken or exc
            job.work.set_exception(exc)

    def queue_data(self, job: Job) -> None:
        """Start data requests of the job's group in collective order, as far as they are due."""
        lane = job.group.lane
        lane.waiting[job.seq] = job
        while lane.next_seq in lane.waiting:
            due = lane.waiting.pop(lane.next_seq)
            lane.next_seq += 1
            if due.work.is_completed():  # a mismatch, or failed from outside
                continue
            broken = due.group.broken
            if broken is not None:
                due.work.set_exception(DistBackendError(f"{due.work.name}: {broken}"))
                continue
            due.phase = "data"
            try:
                due.request = due.data()
            except BaseException as exc:  # noqa: BLE001 - the collective's error
                due.group.broken = due.group.broken or exc
                due.work.set_exception(exc)
                continue
            self.activate(due)

    def skip_data(self, job: Job) -> None:
        """A job that sends no data still takes its turn, so later ones are not held up."""
        self.queue_data(job)

    def activate(self, job: Job) -> None:
        job.order = next(self.counter)
        self.active.append(job)

    def poll(self) -> bool:
        """Advance every job whose request has completed; True if any had."""
        if not self.active:
            return False
        try:
            done = self.MPI.Request.Testsome([job.request for job in self.active])
        except self.MPI.Exception as exc:  # a peer failed under MPI: nothing here can finish
            reason = supervision.failure() or f"MPI failed: {exc}"
            for job in self.active:
                job.group.broken = job.group.broken or DistBackendError(reason)
            self.fail_all(reason)
            return True
        if not done:
            return False
        finished = [self.active[i] for i in done]
        keep = set(done)
        self.active = [job for i, job in enumerate(self.active) if i not in keep]
        for job in sorted(finished, key=lambda j: j.order):
            self.advance(job)
        return True

    def expire(self) -> None:
        """Fail the collectives whose deadline has passed (their group is broken from then)."""
        now = time.monotonic()
        while self.deadlines and (
            self.deadlines[0][0] <= now or self.deadlines[0][2].work.is_completed()
        ):
            _, _, job = heapq.heappop(self.deadlines)
            if job.work.is_completed():
                continue
            if job in self.active:
                self.active.remove(job)
            error = job.group.timeout_error(job.seq, job.work.name)
            job.group.broken = error
            job.work.set_exception(error)

    def fail_all(self, reason: str) -> None:
        """Fail every collective in flight."""
        for job in self.active:
            job.work.set_exception(DistBackendError(f"{job.work.name}: {reason}"))
        self.active.clear()


class MpiProcessGroup(ProcessGroup):
    """A group of MPI ranks: a communicator and the shared progress thread."""

    backend_name = "mpi"
    progress: ProgressThread | None = None
    progress_lock = threading.Lock()

    def __init__(
        self,
        comm: Any = None,
        name: str = "WORLD",
        timeout: timedelta = DEFAULT_TIMEOUT,
        ranks: Sequence[int] | None = None,
    ) -> None:
        MPI = import_mpi()
        self.MPI = MPI
        self.comm = comm if comm is not None else MPI.COMM_WORLD.Dup()
        world_ranks = list(ranks) if ranks is not None else list(range(self.comm.Get_size()))
        super().__init__(self.comm.Get_rank(), world_ranks, name, timeout)
        self.broken: BaseException | None = None
        self.check_shapes = True
        self.check_comm = self.comm.Dup()  # shape checks, so they never reorder data requests
        self.lane = Lane()
        self.submit_lock = threading.Lock()
        with MpiProcessGroup.progress_lock:
            if MpiProcessGroup.progress is None or not MpiProcessGroup.progress.thread.is_alive():
                MpiProcessGroup.progress = ProgressThread(MPI)
        supervision.watch(self)

    # ------------------------------------------------------------------ plumbing
    def launch(
        self,
        name: str,
        data: Callable[[], Any],
        signature: tuple | None,
        after: Callable[[], None] | None = None,
    ) -> Work:
        """Number a collective and queue it on the progress thread (in number order)."""
        with self.submit_lock:
            seq, label = self.next_collective(name)
            work = Work(f"{label} on {self.describe()}")
            failure = supervision.failure()
            if self.broken is not None:
                work.set_exception(
                    DistBackendError(
                        f"{work.name}: the group is unusable after an earlier failure: {self.broken}"
                    )
                )
            elif failure is not None:
                work.set_exception(DistBackendError(f"{work.name}: {failure}"))
            # Even a failed collective takes its turn, so the numbering stays the ranks' own.
            progress = self.progress
            assert progress is not None  # started by __init__
            progress.submit(Job(work, self, seq, signature, data, after))
        return work

    def start_check(self, job: Job) -> Any:
        """Start the exchange of every rank's (element count, dtype)."""
        count, dtype = job.signature
        mine = np.array([count, np.dtype(dtype).num], dtype=np.int64)
        everyone = np.empty((self.size(), 2), dtype=np.int64)
        job.signature = (mine, everyone)
        return self.check_comm.Iallgather(mine, everyone)

    def verify_check(self, job: Job) -> None:
        """Raise ShapeMismatchError if the ranks' counts or dtypes differ."""
        mine, everyone = job.signature
        if (everyone != mine).any():
            shapes = ", ".join(
                f"rank {self.ranks[i]}: {c} elements of {_dtype_name(d)}"
                for i, (c, d) in enumerate(everyone.tolist())
            )
            raise ShapeMismatchError(
                f"{job.work.name}: the ranks passed tensors of different sizes or dtypes ({shapes})"
            )

    def timeout_error(self, seq: int, label: str) -> DistBackendError:
        """The error of a collective past its deadline, naming the ranks that never came."""
        text = f"{label} timed out after {self.timeout.total_seconds():g} s"
        where = supervision.whereabouts(self.group_name)
        if where is None:
            return DistBackendError(
                f"{text}; run under `python -m autograd_async.distributed.run`"
                " to learn which ranks did not arrive"
            )
        missing = []
        for r in self.ranks:
            at = where.get(r)
            if at is None:
                missing.append(f"rank {r} (not responding)")
            elif at[0] < seq:
                missing.append(
                    f"rank {r} (last at {at[1]} #{at[0]})"
                    if at[0]
                    else f"rank {r} (no collective yet)"
                )
        return DistBackendError(f"{text}; missing ranks: {', '.join(missing) or 'none'}")

    def fail_pending(self, error_text: str) -> None:
        """A peer failed: every collective of this group fails now and from now on."""
        self.broken = self.broken or DistBackendError(error_text)
        progress = self.progress
        if progress is None:
            return
        for job in list(progress.active):
            if job.group is self:
                job.work.set_exception(DistBackendError(f"{job.work.name}: {error_text}"))

    # --------------------------------------------------------------- collectives
    def allreduce(
        self, array: np.ndarray, op: ReduceOp, name: str = "all_reduce", checked: bool = True
    ) -> Work:
        mop = mpi_op(self.MPI, op, array.dtype)
        buf = wire_view(array)
        after = (lambda: finish_average(array, self.size())) if op is ReduceOp.AVG else None
        return self.launch(
            name,
            lambda: self.comm.Iallreduce(self.MPI.IN_PLACE, buf, op=mop),
            (array.size, array.dtype) if checked else None,
            after,
        )

    def broadcast(self, array: np.ndarray, src: int, name: str = "broadcast") -> Work:
        buf = wire_view(array)
        return self.launch(name, lambda: self.comm.Ibcast(buf, root=src), (array.size, array.dtype))

    def allgather(self, send: np.ndarray, recv: np.ndarray, name: str = "all_gather") -> Work:
        s, r = wire_view(send), wire_view(recv)
        return self.launch(name, lambda: self.comm.Iallgather(s, r), (send.size, send.dtype))

    def reduce_scatter(
        self, send: np.ndarray, recv: np.ndarray, op: ReduceOp, name: str = "reduce_scatter"
    ) -> Work:
        mop = mpi_op(self.MPI, op, recv.dtype)
        s, r = wire_view(send), wire_view(recv)
        after = (lambda: finish_average(recv, self.size())) if op is ReduceOp.AVG else None
        return self.launch(
            name,
            lambda: self.comm.Ireduce_scatter_block(s, r, op=mop),
            (recv.size, recv.dtype),
            after,
        )

    def reduce(self, array: np.ndarray, dst: int, op: ReduceOp, name: str = "reduce") -> Work:
        mop = mpi_op(self.MPI, op, array.dtype)
        buf = wire_view(array)
        if self.rank() == dst:
            after = (lambda: finish_average(array, self.size())) if op is ReduceOp.AVG else None
            return self.launch(
                name,
                lambda: self.comm.Ireduce(self.MPI.IN_PLACE, buf, op=mop, root=dst),
                (array.size, array.dtype),
                after,
            )
        return self.launch(
            name, lambda: self.comm.Ireduce(buf, None, op=mop, root=dst), (array.size, array.dtype)
        )

    def gather(
        self, send: np.ndarray, recv: np.ndarray | None, dst: int, name: str = "gather"
    ) -> Work:
        s = wire_view(send)
        r = wire_view(recv) if recv is not None else None
        return self.launch(name, lambda: self.comm.Igather(s, r, root=dst), (send.size, send.dtype))

    def scatter(
        self, send: np.ndarray | None, recv: np.ndarray, src: int, name: str = "scatter"
    ) -> Work:
        s = wire_view(send) if send is not None else None
        r = wire_view(recv)
        return self.launch(
            name, lambda: self.comm.Iscatter(s, r, root=src), (recv.size, recv.dtype)
        )

    def barrier(self, name: str = "barrier") -> Work:
        return self.launch(name, lambda: self.comm.Ibarrier(), None)

    def new_subgroup(self, ranks: Sequence[int], name: str, timeout: timedelta) -> Any:
        """Split this communicator (collective over all of its ranks, as PyTorch's new_group)."""
        member = self.ranks[self.rank()] in ranks
        color = 0 if member else self.MPI.UNDEFINED
        key = list(ranks).index(self.ranks[self.rank()]) if member else 0
        made: list[Any] = []

        def split() -> Any:
            made.append(self.comm.Split(color, key))  # blocking, but on the progress thread
            return self.comm.Ibarrier()  # a request to complete the job with

        self.launch("new_group", split, None).wait()
        if not member:
            return None
        return MpiProcessGroup(made[0], name, timeout, ranks=list(ranks))

    def shutdown(self) -> None:
        super().shutdown()
        supervision.unwatch(self)


def _dtype_name(num: int) -> str:
    for code in np.typecodes["All"]:
        try:
            if np.dtype(code).num == num:
                return str(np.dtype(code))
        except TypeError:
            continue
    return f"dtype #{num}"
