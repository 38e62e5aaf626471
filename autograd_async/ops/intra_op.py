"""Intra-op parallelism: a large NumPy kernel split over the batch, one part on a helper thread.

NumPy's copies and ufuncs run on one core, and its BLAS spreads only the matmuls over the
others; a convolution's im2col and col2im copies then leave a core idle for a third of the op.
Splitting the batch in two and running one half on a helper thread (NumPy releases the GIL
inside its kernels) keeps both cores busy through the copies as well. PyTorch's counterpart is
its intra-op thread pool, set by `torch.set_num_threads`; ours has the same setter. The count is
process-wide, as PyTorch's is: it describes the machine, not a task.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def _default_threads() -> int:
    """OMP_NUM_THREADS when set (as PyTorch reads it), else the CPUs this process may use."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class IntraOpPool:
    """Runs the parts of a split kernel: the first on the caller, the second on one helper."""

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def threads(self) -> int:
        """The intra-op thread count (1: every kernel runs whole on its caller)."""
        return self._threads

    def set_threads(self, count: int) -> None:
        """Set the intra-op thread count; kernels split in two only when it is 2 or more."""
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"set_num_threads: expected a positive integer, but got {count!r}")
        self._threads = count

    def split(self, count: int) -> list[tuple[int, int]]:
        """`count` items as (start, stop) parts: two halves when a helper may run, else one."""
        if self._threads < 2 or count < 2:
            return [(0, count)]
        half = count // 2
        return [(0, half), (half, count)]

    def run(self, part: Callable[[int, int], Any], bounds: Sequence[tuple[int, int]]) -> list:
        """`part(start, stop)` for each of one or two parts; the second on the helper thread."""
        if len(bounds) == 1 or self._threads < 2:
            return [part(*b) for b in bounds]
        first, second = bounds
        future = self._helper().submit(part, *second)
        try:
            done = part(*first)
        finally:
            # Wait even when the first part failed: the helper may still write the arrays.
            other = future.result()
        return [done, other]

    def _helper(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="intra-op")
            return self._executor


POOL = IntraOpPool(_default_threads())


def set_num_threads(count: int) -> None:
    """The number of threads a large op may use (PyTorch's `torch.set_num_threads`)."""
    POOL.set_threads(count)


def get_num_threads() -> int:
    """The number of threads a large op may use (PyTorch's `torch.get_num_threads`)."""
    return POOL.threads
