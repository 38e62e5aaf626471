"""The primitives that move work and results between threads, in one place.

Work enters another thread's loop through `loop.call_soon_threadsafe`. A graph task's outcome
travels back to its waiter in one of two ways: a blocked thread waits on a plain lock that the
finishing worker releases (the cheapest cross-thread signal CPython has), and an awaiting coroutine
gets its loop's own future resolved through `call_soon_threadsafe`. Both are set exactly once.
"""

from __future__ import annotations

import asyncio
from _thread import allocate_lock
from collections.abc import Callable


class BlockingWaiter:
    """Lets one thread block until a worker settles the outcome, polling so it can give up."""

    __slots__ = ("_lock", "error")

    def __init__(self) -> None:
        self._lock = allocate_lock()
        self._lock.acquire()
        self.error: BaseException | None = None

    def settle(self, error: BaseException | None) -> None:
        """Record the outcome and wake the waiter (called once, from any thread)."""
        self.error = error
        self._lock.release()

    @property
    def settled(self) -> bool:
        """True once `settle` has run."""
        return not self._lock.locked()

    def wait(self, still_alive: Callable[[], None], poll_seconds: float = 0.5) -> None:
        """Block until settled, calling `still_alive()` (which may raise) between polls."""
        while not self._lock.acquire(timeout=poll_seconds):
            still_alive()
        self._lock.release()
        if self.error is not None:
            raise self.error


class LoopWaiter:
    """Lets a coroutine await an outcome settled from another thread, on its own loop."""

    __slots__ = ("_loop", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.future: asyncio.Future = loop.create_future()

    def settle(self, error: BaseException | None) -> None:
        """Resolve the future on its loop (called once, from any thread)."""
        try:
            self._loop.call_soon_threadsafe(_resolve, self.future, error)
        except RuntimeError:
            pass  # the waiter's loop is closed: nobody is left to tell


def _resolve(future: asyncio.Future, error: BaseException | None) -> None:
    if future.done():  # cancelled by its awaiter meanwhile
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
