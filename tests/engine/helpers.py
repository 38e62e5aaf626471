"""Custom Functions that record where and when the engine ran their backward."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import autograd_async as aa
from autograd_async.engine import get_engine
from autograd_async.engine.trace_events import Handoff


@dataclass
class Visit:
    """Where one backward ran."""

    tag: str
    thread: threading.Thread
    loop: asyncio.AbstractEventLoop | None
    device: str


@dataclass
class Recorder:
    """Collects Visits in execution order (list.append is atomic across threads)."""

    visits: list[Visit] = field(default_factory=list)

    def tags(self) -> list[str]:
        """The tags in the order their backward ran."""
        return [v.tag for v in self.visits]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Probe(aa.autograd.Function):
    """Identity whose backward records its thread, loop and device, optionally sleeping."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, recorder: Recorder, tag: str, sleep: float = 0.0):
        ctx.recorder, ctx.tag, ctx.sleep, ctx.dev = recorder, tag, sleep, str(x.device)
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        if ctx.sleep:
            time.sleep(ctx.sleep)
        ctx.recorder.visits.append(
            Visit(ctx.tag, threading.current_thread(), _running_loop(), ctx.dev)
        )
        return g, None, None, None


class AsyncProbe(Probe):
    """Probe whose async backward awaits `asyncio.sleep` on its device loop, then records."""

    @staticmethod
    async def backward(ctx: Any, g: aa.Tensor):
        await asyncio.sleep(ctx.sleep)
        ctx.recorder.visits.append(
            Visit(ctx.tag, threading.current_thread(), _running_loop(), ctx.dev)
        )
        return g, None, None, None


class Boom(aa.autograd.Function):
    """Identity whose backward raises the given exception."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, error: BaseException):
        ctx.error = error
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        raise ctx.error


def cpu_node_threads() -> set[str]:
    """Names of the threads a cpu node may run on from this thread: the cpu worker's, or this
    (calling) thread's, where a small all-cpu task runs inline (engine/inline.py)."""
    return {"autograd-async:cpu", threading.current_thread().name}


@contextmanager
def worker_path(engine: Any = None) -> Iterator[None]:
    """Every task takes the worker path in this block (inline runs off), as before they existed."""
    engine = engine or get_engine()
    before = engine.inline_max_nodes
    engine.inline_max_nodes = 0
    try:
        yield
    finally:
        engine.inline_max_nodes = before


@dataclass
class EngineTrace:
    """What the engine's trace sink received: the thread of every node run and every handoff.

    The engine's classes are compiled as extension types, so a test observes where work ran
    through the trace the engine emits instead of patching their methods.
    """

    node_runs: list[tuple[Any, str]] = field(default_factory=list)  # (node, its thread's name)
    handoffs: list[tuple[str, str]] = field(default_factory=list)  # (target device, its thread)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, event: Any) -> None:
        name = threading.current_thread().name
        with self._lock:
            if isinstance(event, Handoff):  # recorded by the receiving worker as it deposits
                self.handoffs.append((event.dst_device, name))
            elif type(event) is tuple:  # a node run, recorded on the thread that ran it
                self.node_runs.append((event[0], name))


@contextmanager
def engine_trace() -> Iterator[EngineTrace]:
    """Collect the default engine's trace events for the duration of the block."""
    engine = get_engine()
    trace = EngineTrace()
    previous = engine.trace_sink
    engine.set_trace_sink(trace)
    try:
        yield trace
    finally:
        engine.set_trace_sink(previous)
