# cython: freethreading_compatible=True
"""The primitives that move work and results between threads, in one place.

Work enters another thread's loop through `loop.call_soon_threadsafe`. A gradient crossing from
one device's thread to another's travels as a `GradientFuture`: set once by its producer, from
any thread, and taken by the consumer's loop when it is set. A graph task's outcome travels back
to its waiter in one of two ways: a blocked thread waits on a plain lock that the finishing worker
releases (the cheapest cross-thread signal CPython has), and an awaiting coroutine gets its loop's
own future resolved through `call_soon_threadsafe`. All are set exactly once.
"""

from __future__ import annotations

import asyncio
from _thread import allocate_lock
from collections.abc import Callable
from typing import Any


class GradientFuture:
    """A gradient in flight to the node that consumes it on another device's thread.

    The producer creates it addressed to the consumer's input slot and settles it once, with the
    gradient (`set_result`) or with the error that stopped it (`set_exception`), from whatever
    thread holds the gradient: the producing device's worker, or a stream's completion callback
    once a device-to-host copy has landed. Settling hands the future to `deliver` (the consuming
    worker's inbox), whose loop is woken at most once per batch of futures, however many are
    settled meanwhile: the consumer awaits all its incoming gradients with one wake-up, not one
    per gradient. The consumer reads the value only after taking the future from that inbox, so
    the write of the value happens before its read on any Python, with or without the GIL.

    Set-once is enforced by taking a one-element token list's only element: `list.pop` is
    atomic (under the GIL, and under free-threaded CPython's per-object locks), so of racing
    settlers exactly one wins; the others raise `asyncio.InvalidStateError` instead of replacing
    a gradient the consumer may already have summed.
    """

    __slots__ = (
        "task",
        "node",
        "input_nr",
        "src_node",
        "src_worker",
        "sent_ns",
        "_deliver",
        "_unset",
        "_value",
        "_error",
    )

    def __init__(
        self,
        task: Any,
        node: Any,
        input_nr: int,
        src_node: Any,
        src_worker: Any,
        sent_ns: int,
        deliver: Callable[[GradientFuture], None],
    ) -> None:
        self.task = task
        self.node = node
        self.input_nr = input_nr
        self.src_node = src_node
        self.src_worker = src_worker
        self.sent_ns = sent_ns
        self._deliver = deliver
        self._unset = [True]
        self._value: Any = None
        self._error: BaseException | None = None

    def set_result(self, gradient: Any) -> None:
        """Settle with the gradient and hand the future to its consumer (any thread, once)."""
        try:
            self._unset.pop()
        except IndexError:
            raise asyncio.InvalidStateError(f"{self!r} is already set") from None
        self._value = gradient
        self._deliver(self)

    def set_exception(self, error: BaseException) -> None:
        """Settle with the error that kept the gradient from arriving (any thread, once)."""
        try:
            self._unset.pop()
        except IndexError:
            raise asyncio.InvalidStateError(f"{self!r} is already set") from None
        self._error = error
        self._deliver(self)

    def done(self) -> bool:
        """True once settled."""
        return not self._unset

    def result(self) -> Any:
        """The gradient; raises the settling error. Only for the consumer, once it is delivered."""
        if self._unset:
            raise asyncio.InvalidStateError(f"{self!r} is not set yet")
        if self._error is not None:
            raise self._error
        return self._value

    def __repr__(self) -> str:
        state = "set" if self.done() else "in flight"
        return (
            f"<GradientFuture for input {self.input_nr} of {self.node!r}, "
            f"graph task {getattr(self.task, 'id', '?')}, {state}>"
        )


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
