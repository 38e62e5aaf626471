"""`record_function(name)`: a named range of user code that shows up in a profile.

    with record_function("load batch"):
        batch = await loader.get()

    @record_function("train step")
    async def step(batch): ...

A range is recorded like a forward op: by the thread or asyncio task that entered the profile, and
by the tasks it starts (the sink is a ContextVar), not by other threads. It becomes a slice of cat
"user_annotation" on its thread's track (PyTorch's category for these), a row of kind "user" in
`key_averages()` and in the summary.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

range_sink: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "autograd_async_range_sink", default=None
)


class UserRange(NamedTuple):
    """One `record_function` range, recorded on the thread that ran it."""

    thread_id: int
    thread_name: str
    name: str
    start_ns: int
    end_ns: int
    args: str | None  # the `args` text given to record_function, if any


class record_function:  # noqa: N801 - lower case like torch.profiler.record_function
    """Mark a block (`with`, `async with`) or every call of a function (decorator) as a range.

    Works on plain and `async def` functions: a coroutine's range lasts until it returns, awaits
    included. Outside a profile it records nothing and costs one ContextVar read per entry.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"record_function needs a non-empty name string, got {name!r}")
        self.name = name
        self.args = args
        # (sink, start) per entry still open; a stack, so one object may be entered re-entrantly.
        self._open: list[tuple[Any, int]] = []

    def __enter__(self) -> record_function:
        sink = range_sink.get()
        self._open.append((sink, time.perf_counter_ns() if sink is not None else 0))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sink, start_ns = self._open.pop()
        if sink is not None:
            thread = threading.current_thread()
            sink.record(
                UserRange(
                    thread.ident or 0,
                    thread.name,
                    self.name,
                    start_ns,
                    time.perf_counter_ns(),
                    self.args,
                )
            )

    async def __aenter__(self) -> record_function:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, func: F) -> F:
        """Decorate `func`: each call is a range of its own (calls may overlap)."""
        name, args = self.name, self.args
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def timed_coroutine(*a: Any, **kw: Any) -> Any:
                with record_function(name, args):
                    return await func(*a, **kw)

            return timed_coroutine  # type: ignore[return-value]

        @functools.wraps(func)
        def timed(*a: Any, **kw: Any) -> Any:
            with record_function(name, args):
                return func(*a, **kw)

        return timed  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"record_function({self.name!r})"
