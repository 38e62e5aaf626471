"""The primitives that move work and results between threads, in one place.

Work enters another thread's loop through `loop.call_soon_threadsafe`; a result travels back as a
`concurrent.futures.Future`, awaited with `asyncio.wrap_future` or waited on with a timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any


def call_in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """Schedule `fn(*args)` on `loop` from any thread."""
    loop.call_soon_threadsafe(fn, *args)


def settle(future: concurrent.futures.Future, error: BaseException | None, value: Any = None):
    """Resolve a thread-safe future once; a future already cancelled by its waiter is left alone."""
    if future.done():
        return
    try:
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
    except concurrent.futures.InvalidStateError:
        pass  # cancelled between the check and the set: the waiter has gone


def wait_blocking(
    future: concurrent.futures.Future,
    still_alive: Callable[[], None],
    poll_seconds: float = 0.5,
) -> Any:
    """Block until `future` is done; `still_alive()` runs between polls and raises to give up."""
    while True:
        try:
            return future.result(timeout=poll_seconds)
        except concurrent.futures.TimeoutError:
            still_alive()


async def wait_async(future: concurrent.futures.Future) -> Any:
    """Await a thread-safe future from the caller's loop; cancelling the await cancels the future."""
    return await asyncio.wrap_future(future)
