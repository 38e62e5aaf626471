"""The `nccl` backend: NCCL through CuPy's binding (`cupy.cuda.nccl`), for `cuda` tensors.

One communicator per device: across processes (rank 0's unique id reaches the others through an
MPI `Bcast` of its bytes, never pickle) or across the GPUs of one process (thread ranks, the id
shared through the `HashStore`). A collective follows CUDA's stream rules: the group's
communication stream waits on an event recorded on the caller's current stream, NCCL runs there,
and an event recorded after it completes the `Work`. `Work.wait()` makes the caller's current
stream wait on that event (no host synchronisation, as PyTorch's NCCL work); awaiting the work or
`is_completed()` asks the event, polled by a watcher thread, so no event loop blocks.

CuPy is imported here only. Untested without a GPU: `benchmarks/gpu_nccl_check.py` runs it.
"""

from __future__ import annotations

import queue
import threading
import time
from datetime import timedelta
from typing import Any

import numpy as np

from .process_group import DEFAULT_TIMEOUT, ProcessGroup, ReduceOp
from .work import DistBackendError, Work

__all__ = ["NcclProcessGroup", "NcclWork"]


def import_nccl() -> tuple[Any, Any]:
    """CuPy and its NCCL binding, with an install hint when either is missing."""
    try:
        import cupy  # noqa: PLC0415 - optional dependency, loaded on first use
        from cupy.cuda import nccl  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - needs a GPU build
        raise RuntimeError(
            "the nccl backend needs CuPy with NCCL: pip install 'autograd-async[cuda]'"
        ) from exc
    return cupy, nccl


def nccl_dtype(nccl: Any, dtype: np.dtype) -> int:
    """NCCL's code for a dtype (bool travels as uint8)."""
    table = {
        np.dtype(np.float32): nccl.NCCL_FLOAT32,
        np.dtype(np.float64): nccl.NCCL_FLOAT64,
        np.dtype(np.float16): nccl.NCCL_FLOAT16,
        np.dtype(np.int32): nccl.NCCL_INT32,
        np.dtype(np.int64): nccl.NCCL_INT64,
        np.dtype(np.uint8): nccl.NCCL_UINT8,
        np.dtype(np.int8): nccl.NCCL_INT8,
        np.dtype(np.bool_): nccl.NCCL_UINT8,
    }
    try:
        return table[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"the nccl backend cannot send {dtype} tensors") from None


def nccl_op(nccl: Any, op: ReduceOp, dtype: np.dtype) -> int:
    """NCCL's reduction for `op` (bool: sum and max are a logical or)."""
    if np.dtype(dtype) == np.bool_:
        op = {
            ReduceOp.SUM: ReduceOp.MAX,
            ReduceOp.AVG: ReduceOp.MAX,
            ReduceOp.PRODUCT: ReduceOp.MIN,
        }.get(op, op)
    table = {
        ReduceOp.SUM: nccl.NCCL_SUM,
        ReduceOp.PRODUCT: nccl.NCCL_PROD,
        ReduceOp.MIN: nccl.NCCL_MIN,
        ReduceOp.MAX: nccl.NCCL_MAX,
    }
    if op is ReduceOp.AVG:
        return getattr(nccl, "NCCL_AVG", nccl.NCCL_SUM)
    if op not in table:
        raise ValueError(f"the nccl backend has no ReduceOp.{op.name}")
    return table[op]


class NcclWork(Work):
    """A collective enqueued on a stream: done when its event is."""

    __slots__ = ("event", "cupy")

    def __init__(self, name: str, event: Any, cupy: Any) -> None:
        super().__init__(name)
        self.event = event
        self.cupy = cupy

    def wait(self, timeout: float | timedelta | None = None) -> bool:
        """Make the caller's current stream wait for the collective (no host sync)."""
        error = self.future.exception() if self.future.done() else None
        if error is not None:
            raise error
        self.cupy.cuda.get_current_stream().wait_event(self.event)
        return True


class EventWatcher:
    """One thread that settles NCCL works when their events complete (or their deadline passes)."""

    def __init__(self) -> None:
        self.incoming: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(
            target=self.run, name="autograd-async:nccl-events", daemon=True
        )
        self.thread.start()

    def watch(self, work: NcclWork, deadline: float, timeout_text: str) -> None:
        self.incoming.put((work, deadline, timeout_text))

    def run(self) -> None:
        pending: list = []
        while True:
            try:
                pending.append(self.incoming.get(timeout=None if not pending else 0.0002))
                while True:
                    pending.append(self.incoming.get_nowait())
            except queue.Empty:
                pass
            now = time.monotonic()
            still = []
            for work, deadline, text in pending:
                if work.event.done:
                    work.set_result(None)
                elif now > deadline:
                    work.set_exception(DistBackendError(text))
                else:
                    still.append((work, deadline, text))
            pending = still


class NcclProcessGroup(ProcessGroup):
    """Ranks with one GPU each, talking through an NCCL communicator."""

    backend_name = "nccl"
    watcher: EventWatcher | None = None

    def __init__(
        self,
        rank: int,
        size: int,
        unique_id: tuple,
        device_index: int,
        name: str = "WORLD",
        timeout: timedelta = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(rank, list(range(size)), name, timeout)
        self.cupy, self.nccl = import_nccl()
        self.device_index = device_index
        with self.cupy.cuda.Device(device_index):
            self.comm = self.nccl.NcclCommunicator(size, unique_id, rank)
            self.stream = self.cupy.cuda.Stream(non_blocking=True)
        if NcclProcessGroup.watcher is None:
            NcclProcessGroup.watcher = EventWatcher()
        self._watcher = NcclProcessGroup.watcher  # the one shared by every group

    @classmethod
    def across_processes(
        cls, timeout: timedelta = DEFAULT_TIMEOUT, device_id: Any = None
    ) -> NcclProcessGroup:
        """One rank per MPI process; rank 0's unique id is broadcast as bytes over MPI."""
        from .backend_mpi import import_mpi  # noqa: PLC0415 - MPI only shares the id

        cupy, nccl = import_nccl()
        comm = import_mpi().COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        uid = np.zeros(
            nccl.NCCL_UNIQUE_ID_BYTES if hasattr(nccl, "NCCL_UNIQUE_ID_BYTES") else 128,
            dtype=np.int8,
        )
        if rank == 0:
            uid[:] = np.array(nccl.get_unique_id(), dtype=np.int8)
        comm.Bcast(uid, root=0)
        index = _device_index(device_id, rank, cupy)
        return cls(rank, size, tuple(int(b) for b in uid), index, timeout=timeout)

    @classmethod
    def in_process(
        cls, store: Any, rank: int, size: int, device_id: Any, timeout: timedelta = DEFAULT_TIMEOUT
    ) -> NcclProcessGroup:
        """Thread ranks of one process, one GPU each; the id travels through the store."""
        cupy, nccl = import_nccl()
        key = "nccl_unique_id"
        if rank == 0:
            store.set(key, nccl.get_unique_id())
        deadline = time.monotonic() + timeout.total_seconds()
        while True:
            try:
                uid = store.get(key)
                break
            except KeyError:
                if time.monotonic() > deadline:
                    raise DistBackendError("nccl: rank 0 never published its unique id") from None
                time.sleep(0.001)
        return cls(rank, size, uid, _device_index(device_id, rank, cupy), timeout=timeout)

    # ------------------------------------------------------------------ plumbing
    def enqueue(self, name: str, call: Any) -> Work:
        """Run `call(stream_ptr)` on the communication stream, ordered after the caller's."""
        _, label = self.next_collective(name)
        cupy = self.cupy
        with cupy.cuda.Device(self.device_index):
            ready = cupy.cuda.Event(disable_timing=True)
            ready.record(cupy.cuda.get_current_stream())
            self.stream.wait_event(ready)
            call(self.stream.ptr)
            done = cupy.cuda.Event(disable_timing=True)
            done.record(self.stream)
        work = NcclWork(f"{label} on {self.describe()}", done, cupy)
        text = f"{work.name} timed out after {self.timeout.total_seconds():g} s"
        self._watcher.watch(work, time.monotonic() + self.timeout.total_seconds(), text)
        return work

    def _args(self, array: Any) -> tuple[int, int, int]:
        return array.data.ptr, array.size, nccl_dtype(self.nccl, array.dtype)

    def _average(self, array: Any, op: ReduceOp) -> None:
        if op is ReduceOp.AVG and not hasattr(self.nccl, "NCCL_AVG"):
            with self.cupy.cuda.Device(self.device_index), self.stream:
                array /= self.size()

    # --------------------------------------------------------------- collectives
    def allreduce(
        self, array: Any, op: ReduceOp, name: str = "all_reduce", checked: bool = True
    ) -> Work:
        ptr, n, dt = self._args(array)
        rop = nccl_op(self.nccl, op, array.dtype)

        def call(stream: int) -> None:
            self.comm.allReduce(ptr, ptr, n, dt, rop, stream)
            self._average(array, op)

        return self.enqueue(name, call)

    def broadcast(self, array: Any, src: int, name: str = "broadcast") -> Work:
        ptr, n, dt = self._args(array)
        return self.enqueue(name, lambda s: self.comm.broadcast(ptr, ptr, n, dt, src, s))

    def allgather(self, send: Any, recv: Any, name: str = "all_gather") -> Work:
        sptr, n, dt = self._args(send)
        return self.enqueue(name, lambda s: self.comm.allGather(sptr, recv.data.ptr, n, dt, s))

    def reduce_scatter(
        self, send: Any, recv: Any, op: ReduceOp, name: str = "reduce_scatter"
    ) -> Work:
        rptr, n, dt = self._args(recv)
        rop = nccl_op(self.nccl, op, recv.dtype)

        def call(stream: int) -> None:
            self.comm.reduceScatter(send.data.ptr, rptr, n, dt, rop, stream)
            self._average(recv, op)

        return self.enqueue(name, call)

    def reduce(self, array: Any, dst: int, op: ReduceOp, name: str = "reduce") -> Work:
        ptr, n, dt = self._args(array)
        rop = nccl_op(self.nccl, op, array.dtype)

        def call(stream: int) -> None:
            self.comm.reduce(ptr, ptr, n, dt, rop, dst, stream)
            if self.rank() == dst:
                self._average(array, op)

        return self.enqueue(name, call)

    def gather(self, send: Any, recv: Any, dst: int, name: str = "gather") -> Work:
        sptr, n, dt = self._args(send)

        def call(stream: int) -> None:
            self.nccl.groupStart()
            if self.rank() == dst:
                for peer in range(self.size()):
                    self.comm.recv(recv[peer].data.ptr, n, dt, peer, stream)
            self.comm.send(sptr, n, dt, dst, stream)
            self.nccl.groupEnd()

        return self.enqueue(name, call)

    def scatter(self, send: Any, recv: Any, src: int, name: str = "scatter") -> Work:
        rptr, n, dt = self._args(recv)

        def call(stream: int) -> None:
            self.nccl.groupStart()
            if self.rank() == src:
                for peer in range(self.size()):
                    self.comm.send(send[peer].data.ptr, n, dt, peer, stream)
            self.comm.recv(rptr, n, dt, src, stream)
            self.nccl.groupEnd()

        return self.enqueue(name, call)

    def barrier(self, name: str = "barrier") -> Work:
        with self.cupy.cuda.Device(self.device_index):
            token = self.cupy.zeros(1, dtype=self.cupy.float32)
        return self.allreduce(token, ReduceOp.SUM, name)

    def shutdown(self) -> None:
        super().shutdown()
        self.comm.destroy()


def _device_index(device_id: Any, rank: int, cupy: Any) -> int:
    if device_id is None:
        return rank % cupy.cuda.runtime.getDeviceCount()
    if isinstance(device_id, int):
        return device_id
    return int(getattr(device_id, "index", None) or str(device_id).rpartition(":")[2] or 0)
