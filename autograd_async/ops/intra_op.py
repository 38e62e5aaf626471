"""Intra-op parallelism: a large NumPy kernel split over the batch, one part on a helper thread.

NumPy's copies and ufuncs run on one core, and its BLAS spreads only the matmuls over the
others. With more than one thread set here, a large convolution runs its im2col, col2im and
layout copies as two halves of the batch at once, one on a helper thread (NumPy releases the
GIL inside its kernels). PyTorch's counterpart is its intra-op pool, set by
`torch.set_num_threads`; ours has the same setter, but it defaults to one thread: on the
two-vCPU machine the benchmarks ran on, those copies are bound by memory bandwidth, and the
split took 1.00 and 0.98 of the whole-batch time in paired blocks (two and one BLAS threads,
load average 1.4), while adding a dependency on a second thread being scheduled, which cost up
to several times the step on a busy machine. The count is process-wide, as PyTorch's is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any


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


POOL = IntraOpPool(1)


def set_num_threads(count: int) -> None:
    """The number of threads a large op may use (PyTorch's `torch.set_num_threads`)."""
    POOL.set_threads(count)


def get_num_threads() -> int:
    """The number of threads a large op may use (PyTorch's `torch.get_num_threads`)."""
    return POOL.threads
