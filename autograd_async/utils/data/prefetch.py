"""`async for batch in loader`: a thread builds the next batches while the caller's coroutine
awaits (backward, I/O), handing them to the caller's loop through a bounded channel.

The thread holds only the channel, never the iterator, so an iterator the caller drops (a `break`
out of `async for`) is collected and its finaliser stops the thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from .workers import POLL_SECONDS

_ITEM, _END, _ERROR = range(3)


class _Channel:
    """The state the producer thread and the consuming loop share."""

    def __init__(self, loop: asyncio.AbstractEventLoop, prefetch: int) -> None:
        self.loop = loop
        self.space = threading.Semaphore(prefetch)
        self.stop = threading.Event()
        self.ready: deque[tuple[int, Any]] = deque()
        self.waiter: asyncio.Future | None = None

    def deliver(self, kind: int, value: Any) -> bool:
        """Hand an item to the loop (from the producer thread); False once nobody listens."""
        try:
            self.loop.call_soon_threadsafe(self._arrive, kind, value)
            return True
        except RuntimeError:  # the loop is closed
            self.stop.set()
            return False

    def _arrive(self, kind: int, value: Any) -> None:
        self.ready.append((kind, value))
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """Tell the producer to stop; wake it if it waits for space."""
        self.stop.set()
        self.space.release()


def _produce(channel: _Channel, make_batches: Callable[[], Iterator[Any]]) -> None:
    batches = None
    try:
        batches = make_batches()
        while not channel.stop.is_set():
            if not channel.space.acquire(timeout=POLL_SECONDS):
                continue
            if channel.stop.is_set():
                break
            try:
                batch = next(batches)
            except StopIteration:
                channel.deliver(_END, None)
                break
            if not channel.deliver(_ITEM, batch):
                break
    except BaseException as error:  # the dataset, sampler or collate_fn failed
        channel.deliver(_ERROR, error)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # stops the loader's worker threads


class AsyncBatchIterator:
    """The batches of one epoch, awaited; at most `prefetch` built ahead of the caller."""

    def __init__(
        self, make_batches: Callable[[], Iterator[Any]], prefetch: int, timeout: float
    ) -> None:
        if not isinstance(prefetch, int) or prefetch < 1:
            raise ValueError(f"prefetch should be a positive integer, but got prefetch={prefetch}")
        self._channel = channel = _Channel(asyncio.get_running_loop(), prefetch)
        self._timeout = timeout or None
        self._done = False
        self._thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(_produce, channel, make_batches),
            name="autograd-async-prefetch",
            daemon=True,
        )
        weakref.finalize(self, channel.close)
        self._thread.start()

    def __aiter__(self) -> AsyncBatchIterator:
        return self

    async def __anext__(self) -> Any:
        if self._done:
            raise StopAsyncIteration
        channel = self._channel
        if not channel.ready:
            channel.waiter = channel.loop.create_future()
            try:
                await asyncio.wait_for(channel.waiter, self._timeout)
            except TimeoutError:
                await self.aclose()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
            finally:
                channel.waiter = None
        kind, value = channel.ready.popleft()
        if kind == _ITEM:
            channel.space.release()
            return value
        self._done = True
        channel.close()
        if kind == _ERROR:
            raise value
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop loading ahead; the thread ends after the batch it is building, if any."""
        self._done = True
        self._channel.close()

    async def __aenter__(self) -> AsyncBatchIterator:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    @property
    def producer_alive(self) -> bool:
        """Whether the loading thread still runs (for tests and diagnostics)."""
        return self._thread.is_alive()
