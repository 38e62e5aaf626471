"""Work handles: what an `async_op=True` collective returns, and the errors of collectives.

A `Work` wraps a `concurrent.futures.Future` that a backend's progress thread settles. It can be
awaited from any event loop (`await work`: the loop keeps running, nothing blocks it), waited on
from a plain thread (`work.wait(timeout=...)`), or polled (`work.is_completed()`).

The tensor-level functions attach their finishers (`then`) after the backend has the collective,
so the backend may settle it first: a rank that arrives last can have its round combined and
settled before its own thread attaches the copy back into its tensor. A finisher attached to a
settled handle therefore runs at once, on the attaching thread, instead of being dropped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Generator
from datetime import timedelta
from typing import Any

from ..errors import DistributedError

__all__ = ["DistBackendError", "DistError", "ShapeMismatchError", "Work", "completed_work"]


class DistError(DistributedError, RuntimeError):
    """A collective failed (PyTorch's `torch.distributed.DistError`)."""


class DistBackendError(DistError):
    """A collective failed in its backend: a timeout, a rank that died or raised, a mismatch."""


class ShapeMismatchError(DistBackendError):
    """The ranks passed tensors of different sizes or dtypes to one collective."""


def seconds(timeout: float | timedelta | None) -> float | None:
    """A timeout as seconds (None stays None)."""
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return None if timeout is None else float(timeout)


class Work:
    """The handle of one collective in flight (PyTorch's `torch.distributed.Work`)."""

    __slots__ = ("future", "name", "_then", "_outcome", "_lock", "completed_ns")

    def __init__(self, name: str, future: concurrent.futures.Future | None = None) -> None:
        self.name = name
        self.future: concurrent.futures.Future = future or concurrent.futures.Future()
        self._then: list[Callable[[], None]] = []
        # None while the backend works; "ok" or "failed" once it settled the handle. Guarded
        # by _lock with _then, so a finisher is either run by the settling thread or by `then`.
        self._outcome: str | None = None
        self._lock = threading.Lock()
        self.completed_ns = 0  # perf_counter_ns when the backend settled it (0 while pending)

    # ------------------------------------------------------------ settling (backends)
    def set_result(self, value: Any = None) -> None:
        """Mark the collective done (called by the backend, on its thread)."""
        self.completed_ns = time.perf_counter_ns()
        while True:  # finishers attached while earlier ones run are run here too
            with self._lock:
                finishers, self._then = self._then, []
                if not finishers:
                    if self._outcome is None:
                        self._outcome = "ok"
                    break
            try:
                for finish in finishers:  # copy results back into the caller's tensors
                    finish()
            except BaseException as exc:  # noqa: BLE001 - reported through the future
                self.set_exception(exc)
                return
        if not self.future.done():
            self.future.set_result(value)

    def set_exception(self, error: BaseException) -> None:
        """Fail the collective (called by the backend, on its thread)."""
        with self._lock:
            if self._outcome == "ok":  # settled already: the first outcome stands, as a future's
                return
            self._outcome = "failed"
            self._then.clear()
        if not self.future.done():
            self.future.set_exception(error)

    def then(self, finish: Callable[[], None]) -> Work:
        """Run `finish` when the communication is done, before waiters wake (copies a result
        back into a tensor that was not contiguous): on the backend's thread while the
        collective runs, at once on this thread if the backend already settled it, never if
        it failed. A finisher run here raises its own error to this caller."""
        with self._lock:
            if self._outcome is None:
                self._then.append(finish)
                return self
            failed = self._outcome == "failed"
        if not failed:
            finish()
        return self

    # ----------------------------------------------------------------- waiting (users)
    def is_completed(self) -> bool:
        """True once the collective has finished (successfully or not)."""
        return self.future.done()

    def is_success(self) -> bool:
        """True once the collective has finished without an error."""
        return self.future.done() and self.future.exception() is None

    def exception(self) -> BaseException | None:
        """The error the collective failed with, None while running or after success."""
        return self.future.exception() if self.future.done() else None

    def wait(self, timeout: float | timedelta | None = None) -> bool:
        """Block until the collective is done; raise its error, or DistBackendError after
        `timeout` (the collective itself keeps its own deadline)."""
        try:
            self.future.result(seconds(timeout))
        except concurrent.futures.TimeoutError:
            raise DistBackendError(
                f"{self.name}: Work.wait timed out after {seconds(timeout)} s"
            ) from None
        return True

    def result(self) -> Any:
        """The collective's result (None for in-place collectives), waiting for it."""
        return self.future.result()

    def get_future(self) -> concurrent.futures.Future:
        """The future the backend settles (PyTorch returns a `torch.futures.Future`)."""
        return self.future

    def __await__(self) -> Generator[Any, None, bool]:
        yield from asyncio.wrap_future(self.future).__await__()
        return True

    def __repr__(self) -> str:
        state = "completed" if self.is_completed() else "pending"
        return f"<Work {self.name} {state}>"


def completed_work(name: str) -> Work:
    """A Work that is already done (collectives that need no communication)."""
    work = Work(name)
    work.set_result(None)
    return work
