"""Intra-op parallelism: a large NumPy kernel run as parts, shared by its caller and helpers.

NumPy's copies and ufuncs run on one core, and its BLAS spreads a matmul over the cores well
only when the matmul is large. A large convolution instead runs as parts of its batch
(`conv_items`), taken by its caller and by helper threads (NumPy releases the GIL inside its
kernels). PyTorch's counterpart is its intra-op pool, set by `torch.set_num_threads`; ours has
the same setter, and as in PyTorch it starts at the cores this process may use. The count is
process-wide, as PyTorch's is.

Parts are claimed, not assigned: the caller and each helper take the next unclaimed part until
none is left, and the caller then waits only for parts a helper has already begun. A helper that
the OS schedules late (the other core busy) finds nothing left and costs nothing; the caller
never waits for a thread to start.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# How long the caller waits at a time for a helper's part to end before looking again. The wait
# is not abandoned: the helper is still writing the caller's arrays. A part is one slice of one
# NumPy kernel, so it ends.
_PART_WAIT_S = 1.0


def usable_cores() -> int:
    """The cores this process may run on (its affinity), or the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class _Claims:
    """Which parts are taken, their results, and the parts helpers still run."""

    def __init__(self, count: int) -> None:
        self._cond = threading.Condition()
        self._next = 0
        self._count = count
        self._running_on_helpers = 0
        self.results: list[Any] = [None] * count
        self.error: BaseException | None = None
        self.scratch: list[Any] = []

    def take(self, on_helper: bool) -> int | None:
        with self._cond:
            if self._next >= self._count or self.error is not None:
                return None
            index, self._next = self._next, self._next + 1
            self._running_on_helpers += on_helper
            return index

    def done(self, on_helper: bool, error: BaseException | None = None) -> None:
        with self._cond:
            if error is not None and self.error is None:
                self.error = error
            if on_helper:
                self._running_on_helpers -= 1
                self._cond.notify_all()

    def wait_for_helpers(self) -> None:
        with self._cond:
            while self._running_on_helpers:
                self._cond.wait(_PART_WAIT_S)


class IntraOpPool:
    """Runs the parts of a split kernel on its caller and up to `threads - 1` helper threads."""

    def __init__(self, threads: int | None = None) -> None:
        self._threads = usable_cores() if threads is None else threads
        self._executor: ThreadPoolExecutor | None = None
        self._executor_threads = 0
        self._lock = threading.Lock()

    @property
    def threads(self) -> int:
        """The intra-op thread count (1: every kernel runs whole on its caller)."""
        return self._threads

    def set_threads(self, count: int) -> None:
        """Set the intra-op thread count; kernels split only when it is 2 or more."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"set_num_threads: expected a positive integer, but got {count!r}")
        self._threads = count

    def run_parts(
        self,
        part: Callable[[int, int, Any], Any],
        bounds: Sequence[tuple[int, int]],
        scratch: Callable[[], Any] = lambda: None,
    ) -> tuple[list, list]:
        """`part(start, stop, scratch)` for each part; each thread makes its `scratch()` once.

        Returns the results in the order of `bounds` and the scratch objects of the threads
        that took a part. The first error is raised once no helper is still inside a part.
        """
        claims = _Claims(len(bounds))
        helpers = min(self._threads - 1, len(bounds) - 1)
        if helpers > 0:
            executor = self._helpers()
            try:
                for _ in range(helpers):  # each in a copy of the caller's context, as handoffs go
                    executor.submit(
                        contextvars.copy_context().run,
                        self._drain,
                        claims,
                        part,
                        bounds,
                        scratch,
                        True,
                    )
            except RuntimeError:  # closed meanwhile by another thread: the caller takes the rest
                pass
        try:
            self._drain(claims, part, bounds, scratch, False)
        finally:
            claims.wait_for_helpers()
        if claims.error is not None:
            raise claims.error
        return claims.results, claims.scratch

    @staticmethod
    def _drain(
        claims: _Claims,
        part: Callable,
        bounds: Sequence[tuple[int, int]],
        scratch: Callable[[], Any],
        on_helper: bool,
    ) -> None:
        mine = ...
        while (index := claims.take(on_helper)) is not None:
            try:
                if mine is ...:
                    mine = scratch()
                    claims.scratch.append(mine)
                claims.results[index] = part(*bounds[index], mine)
            except BaseException as error:  # noqa: BLE001  (raised on the caller)
                claims.done(on_helper, error)
                if not on_helper:
                    raise
                return
            claims.done(on_helper)

    def close(self) -> None:
        """Let the helper threads end once idle; a later split starts new ones."""
        with self._lock:
            executor, self._executor, self._executor_threads = self._executor, None, 0
        if executor is not None:
            executor.shutdown(wait=False)

    def _helpers(self) -> ThreadPoolExecutor:
        with self._lock:
            wanted = max(1, self._threads - 1)
            if self._executor is None or self._executor_threads < wanted:
                old, self._executor = (
                    self._executor,
                    ThreadPoolExecutor(wanted, thread_name_prefix="intra-op"),
                )
                self._executor_threads = wanted
                if old is not None:
                    old.shutdown(wait=False)
            return self._executor


POOL = IntraOpPool()


def set_num_threads(count: int) -> None:
    """The number of threads a large op may use (PyTorch's `torch.set_num_threads`)."""
    POOL.set_threads(count)


def get_num_threads() -> int:
    """The number of threads a large op may use (PyTorch's `torch.get_num_threads`)."""
    return POOL.threads
