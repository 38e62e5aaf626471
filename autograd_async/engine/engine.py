"""The engine: starts device workers on first use, runs graph tasks on them, reports completion.

One engine serves blocking (`run`) and awaiting (`run_async`) callers. A graph task starts on the
worker of its root's device; nodes hand gradients to other devices' workers as they go; the task
finishes when no node is queued and no handoff is in flight anywhere. A small all-cpu task runs on
the calling thread instead, standing in for the cpu worker (`inline.py`).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import warnings
from typing import Any, NamedTuple

from ..backends.stream_context import stream_overrides
from ..core.graph import Node
from ..devices import CPU, Device, DeviceError, backend_for, check_available
from ..graph_task import GraphTask, RunnableTask, TaskStart
from ..node_evaluation import describe_node
from .device_worker import ABANDON, START, DeviceWorker, task_of, thread_state
from .handoff import BlockingWaiter, LoopWaiter
from .inline import DEFAULT_MAX_ELEMENTS, DEFAULT_MAX_NODES, claim, inline_runs_on, run_inline
from .loops import default_loop_kind, loop_factory
from .stream_sync import check_default_streams, sync_finish, sync_start
from .trace_events import CallerAwait

# Blocking reentrant calls nest this deep on one thread before a helper thread takes over the
# worker, so 1,000-deep reentrant backward never exhausts a thread's stack (PyTorch does the same).
MAX_NESTING_PER_THREAD = 24

# The reentrant depth of the async node whose coroutine is running (-1 outside any node).
reentrant_depth: contextvars.ContextVar[int] = contextvars.ContextVar(
    "autograd_async_reentrant_depth", default=-1
)


def queue_callback(callback: Any) -> None:
    """Run `callback()` once the backward pass now running has run all its nodes.

    Only from inside a backward (a node's backward or a hook); a reentrant backward's callbacks
    run when that inner pass ends.
    """
    worker = thread_state.worker
    task = worker.running_task if worker is not None else None
    if task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    task.add_final_callback(callback)


class EngineClosedError(RuntimeError):
    """The engine was shut down; start a new one (or use the default, which restarts)."""


class DeviceStats(NamedTuple):
    """What one device worker has done."""

    nodes_run: int
    queue_depth: int
    busy_ns: int
    handoffs_in: int
    handoffs_out: int


class Engine:
    """Device workers plus the logic that starts, finishes and fails graph tasks on them."""

    #: Tasks of at most this many nodes, all on cpu, run on the calling thread (0: never).
    inline_max_nodes: int = DEFAULT_MAX_NODES
    #: ... when the gradients their nodes receive total at most this many elements (inline.py).
    inline_max_elements: int = DEFAULT_MAX_ELEMENTS

    def __init__(self, loop: str | None = None) -> None:
        self.loop_kind = loop or default_loop_kind()
        self._factory = loop_factory(self.loop_kind)
        self._workers: dict[Device, DeviceWorker] = {}
        self._lock = threading.Lock()
        self._state = "open"
        self.trace_sink: Any = None
        self._scope_tokens: list[contextvars.Token] = []

    # ---------------------------------------------------------------- state
    @property
    def state(self) -> str:
        """'open' or 'closed'."""
        return self._state

    def check_open(self) -> None:
        """Raise EngineClosedError after shutdown."""
        if self._state != "open":
            raise EngineClosedError(
                "the autograd engine has been shut down; create a new Engine, or call "
                "autograd_async.engine.get_engine() for a fresh default one"
            )

    def worker(self, device: Device) -> DeviceWorker:
        """The worker of `device`, started on first use and restarted if its loop died."""
        found = self._workers.get(device)
        if found is not None and not found.dead and self._state == "open":
            return found
        with self._lock:
            self.check_open()
            found = self._workers.get(device)
            if found is None or found.dead:
                try:
                    check_available(device)
                except DeviceError as exc:
                    raise DeviceError(f"cannot start the {device} worker: {exc}") from exc
                found = DeviceWorker(self, device, self._factory)
                found.start()
                self._workers[device] = found
        return found

    def prewake(self, device: Device) -> None:
        """Begin waking `device`'s worker for a task the calling thread is about to prepare.

        Not the cpu worker while inline runs are on: a task rooted there most often runs on the
        calling thread, and waking the worker for nothing would cost both threads time.
        """
        if self._state == "open" and thread_state.worker is None:
            if device is CPU and inline_runs_on(self):
                return
            self.worker(device).prewake()

    def workers(self) -> dict[str, DeviceWorker]:
        """The started workers by device name."""
        return {str(d): w for d, w in self._workers.items()}

    def set_trace_sink(self, sink: Any) -> None:
        """Install (or with None remove) the object whose `record(event)` receives trace events."""
        self.trace_sink = sink

    def stats(self) -> dict[str, DeviceStats]:
        """Per-device counters: nodes run, queue depth, busy time, handoffs in and out."""
        return {
            str(d): DeviceStats(w.nodes_run, len(w.ready), w.busy_ns, w.handoffs_in, w.handoffs_out)
            for d, w in list(self._workers.items())
        }

    def reset_stats(self) -> None:
        """Zero every worker's counters."""
        for w in list(self._workers.values()):
            w.nodes_run = w.busy_ns = w.handoffs_in = w.handoffs_out = 0

    # ----------------------------------------------------------- running tasks
    def _start(self, task: GraphTask, starts: list[TaskStart]) -> None:
        check_default_streams(starts)
        caller = task.caller_streams = stream_overrides.get()
        if caller is not None or any(node._stream is not None for node, _, _ in starts):
            sync_start(task, starts)  # roots on other streams wait for the caller's
        task.add_outstanding(1)
        root_device = starts[0][0].device
        self.worker(root_device).submit((START, task, starts))

    def run(self, prepared: RunnableTask, kind: str = "backward") -> None:
        """Run a prepared graph task, blocking the calling thread until it finishes."""
        self.check_open()
        task = prepared.task
        driving = thread_state.worker
        if driving is not None and driving.engine is self:
            self._run_reentrant(task, prepared.starts, driving)
            return
        caller_loop = asyncio._get_running_loop()  # None off a loop thread, no exception raised
        if caller_loop is not None:
            refuse_to_block_a_needed_loop(task, caller_loop, kind)
        if self._run_inline(prepared, kind):
            return
        waiter = BlockingWaiter()
        task.on_finish = waiter.settle
        begun = time.perf_counter_ns()
        self._start(task, prepared.starts)
        try:
            waiter.wait(self.check_open)
        except BaseException:
            self.abandon(task)
            raise
        finally:
            self._record_await(task, kind, begun)

    async def run_async(self, prepared: RunnableTask, kind: str = "backward_async") -> None:
        """Run a prepared graph task, awaiting it without blocking the caller's loop.

        Cancelling the await (or a timeout around it) abandons the graph task.
        """
        self.check_open()
        task = prepared.task
        task.reentrant_depth = reentrant_depth.get() + 1
        if self._run_inline(prepared, kind, raise_error=False):
            await asyncio.sleep(0)  # still an await that lets the loop's other tasks run
            if task.error is not None:
                raise task.error
            return
        waiter = LoopWaiter(asyncio.get_running_loop())
        task.on_finish = waiter.settle
        begun = time.perf_counter_ns()
        self._start(task, prepared.starts)
        try:
            await waiter.future
        except BaseException:
            self.abandon(task)
            raise
        finally:
            self._record_await(task, kind, begun)

    def _run_inline(self, prepared: RunnableTask, kind: str, raise_error: bool = True) -> bool:
        """Run the task on this thread if it qualifies (see inline.py); False if it does not."""
        task = prepared.task
        worker = claim(self, task)
        if worker is None:
            return False
        begun = time.perf_counter_ns()
        try:
            run_inline(worker, task, prepared.starts)
        except BaseException:  # interrupted between nodes: the task is given up as a cancel is
            self.abandon(task)
            raise
        finally:
            self._record_await(task, kind, begun)
        if raise_error and task.error is not None:
            raise task.error
        return True

    def _run_reentrant(
        self, task: GraphTask, starts: list[TaskStart], worker: DeviceWorker
    ) -> None:
        parent = worker.running_task
        task.reentrant_depth = (parent.reentrant_depth if parent is not None else 0) + 1
        task.on_finish = lambda error: worker.wake_waiter()
        self._start(task, starts)
        if thread_state.nesting < MAX_NESTING_PER_THREAD:
            thread_state.nesting += 1
            try:
                worker.run_nested(task, self.check_open)
            finally:
                thread_state.nesting -= 1
        else:
            self._run_on_helper_thread(task, worker)
        if task.error is not None:
            raise task.error

    def _run_on_helper_thread(self, task: GraphTask, worker: DeviceWorker) -> None:
        """Hand the worker to a fresh thread (this one blocks), bounding each thread's stack."""
        context = contextvars.copy_context()
        failure: list[BaseException] = []
        worker_thread = worker.thread
        if worker_thread is None:  # a worker drives nodes only once started
            raise RuntimeError(f"the {worker.device} worker was never started")

        def drive() -> None:
            thread_state.worker = worker
            backend_for(worker.device).use_device(worker.device)  # a new thread: enter it
            worker.note_driver_thread()
            try:
                worker.run_nested(task, self.check_open)
            except BaseException as exc:  # noqa: BLE001 - handed to the blocked thread
                failure.append(exc)

        helper = threading.Thread(
            target=context.run,
            args=(drive,),
            name=f"{worker_thread.name}:reentrant-depth-{task.reentrant_depth}",
            daemon=True,
        )
        helper.start()
        while helper.is_alive():
            helper.join(0.5)
            if self._state != "open" and helper.is_alive():
                helper.join(1.0)
                break
        if failure:
            raise failure[0]

    def _record_await(self, task: GraphTask, kind: str, begun: int) -> None:
        sink = self.trace_sink
        if sink is not None:
            thread = threading.current_thread()
            sink.record(
                CallerAwait(
                    task.id, thread.ident or 0, thread.name, kind, begun, time.perf_counter_ns()
                )
            )

    # ------------------------------------------------------- task completion
    def finish_task(self, task: GraphTask) -> None:
        """Called by the worker that saw the task's last outstanding unit finish."""
        if task.side_streams is not None or task.caller_streams is not None:
            try:
                sync_finish(task)  # the caller's streams wait for the ones that ran nodes
            except BaseException as exc:  # noqa: BLE001 - reported to the caller
                if task.fail(exc) and task.on_finish is not None:
                    task.on_finish(exc)
                return
        if task.final_callbacks is not None:
            try:
                task.run_final_callbacks()
            except BaseException as exc:  # noqa: BLE001 - reported to the caller
                if task.fail(exc) and task.on_finish is not None:
                    task.on_finish(exc)
                return
        if task.complete() and task.on_finish is not None:
            task.on_finish(None)

    def fail_task(
        self, task: GraphTask, error: BaseException, node: Node | None, worker: DeviceWorker
    ) -> None:
        """Fail the task with `error`, annotated with the node, device and worker thread."""
        if node is not None and not getattr(error, "_autograd_async_annotated", False):
            _annotate(error, node, worker, task)
        if task.fail(error):
            if task.on_finish is not None:
                task.on_finish(error)
            self._broadcast_abandon(task)

    def abandon(self, task: GraphTask) -> None:
        """Give up a task whose caller went away (cancelled, timed out, interrupted)."""
        if task.fail(asyncio.CancelledError(f"graph task {task.id} was abandoned by its caller")):
            self._broadcast_abandon(task)

    def _broadcast_abandon(self, task: GraphTask) -> None:
        for w in list(self._workers.values()):
            if not w.dead:
                w.submit((ABANDON, task))

    def reject(self, item: Any, error: BaseException | None, worker: DeviceWorker) -> None:
        """A worker could not take an item (its loop is closed): fail the item's task."""
        task = task_of(item)
        if self._state == "open":
            text = (
                f"the {worker.device} worker is no longer running; graph task {task.id} cannot run"
            )
        else:
            text = f"the engine shut down while graph task {task.id} ran"
        closed = EngineClosedError(text)
        closed.__cause__ = error
        if task.fail(closed) and task.on_finish is not None:
            task.on_finish(closed)

    # ----------------------------------------------------------------- close
    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every worker; tasks still running fail with EngineClosedError."""
        with self._lock:
            if self._state == "closed":
                return
            self._state = "closed"
            workers = list(self._workers.values())
        for w in workers:
            w.stop(timeout)

    async def aclose(self) -> None:
        """Shut down without blocking the caller's loop."""
        await asyncio.get_running_loop().run_in_executor(None, self.shutdown)

    def __enter__(self) -> Engine:
        self._scope_tokens.append(current_engine.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        current_engine.reset(self._scope_tokens.pop())
        self.shutdown()

    async def __aenter__(self) -> Engine:
        self._scope_tokens.append(current_engine.set(self))
        return self

    async def __aexit__(self, *exc: object) -> None:
        current_engine.reset(self._scope_tokens.pop())
        await self.aclose()


def refuse_to_block_a_needed_loop(
    task: GraphTask, loop: asyncio.AbstractEventLoop, kind: str
) -> None:
    """Raise if a node of `task` must run work on `loop`, which a blocking call would block.

    A node names such a loop in its `needs_event_loop` attribute (a distributed receive node
    names its client's loop), and what runs there in `needs_event_loop_for`. Blocking that loop's
    own thread on the task would wait forever (or until some timeout), so it fails at once.
    """
    for node in task.dependencies:
        if getattr(node, "needs_event_loop", None) is loop:
            what = getattr(node, "needs_event_loop_for", "its backward")
            raise RuntimeError(
                f"a blocking {kind}() was called on the thread of a running event loop, which "
                f"node {describe_node(node)} needs for {what}: it would wait on itself. "
                f"Use `await {kind}_async(...)` there instead (for a distributed context, "
                "`await distributed.backward(ctx, ...)`)"
            )


def _annotate(error: BaseException, node: Node, worker: DeviceWorker, task: GraphTask) -> None:
    thread = threading.current_thread()
    if worker.thread is None or thread.name.startswith(worker.thread.name):
        runner = f"worker thread {thread.name}"  # the worker's own, or its reentrant helper's
    else:
        runner = f"calling thread {thread.name} (run inline for the {worker.device} worker)"
    where = f"raised in backward node {describe_node(node)}, {runner}, graph task {task.id}"
    try:
        error.add_note(where)
        error._autograd_async_annotated = True  # type: ignore[attr-defined]
        error.node_name = node.name()  # type: ignore[attr-defined]
        error.device = str(node.device)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return
    if not task.anomaly:
        return
    if node._metadata and "traceback_" in node._metadata:
        trace = "".join(node._metadata["traceback_"])
        error.add_note(f"Traceback of forward call that caused the error (anomaly mode):\n{trace}")
        # PyTorch's warning too, for code and logs that look for it.
        message = (
            f"Error detected in {node.name()}. Traceback of forward call that caused the "
            f"error:\n{trace}"
        )
    else:
        message = (
            f"Error detected in {node.name()}. No forward pass information available. Enable "
            "detect anomaly during forward pass for more information."
        )
    warnings.warn(message, UserWarning, stacklevel=1)
    parent = node._metadata.get("parent_") if node._metadata else None
    while parent is not None:  # the backward calculations that recorded this node, outward
        trace = "".join((parent._metadata or {}).get("traceback_", ()))
        warnings.warn(
            f"\n\nPrevious calculation was induced by {parent.name()}. Traceback of forward call "
            f"that induced the previous calculation:\n{trace}",
            UserWarning,
            stacklevel=1,
        )
        parent = (parent._metadata or {}).get("parent_")


current_engine: contextvars.ContextVar[Engine | None] = contextvars.ContextVar(
    "autograd_async_engine", default=None
)
"""The engine scoped by `with Engine():` (or `async with`) in this context; None means the default
engine."""


class DefaultEngine:
    """Holds the process's default engine, made on first use and remade after shutdown."""

    def __init__(self) -> None:
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self.loop_kind: str | None = None

    def get(self) -> Engine:
        engine = self._engine
        if engine is not None and engine._state == "open":
            return engine
        with self._lock:
            if self._engine is None or self._engine._state != "open":
                self._engine = Engine(self.loop_kind)
            return self._engine

    def shutdown(self, timeout: float = 5.0) -> None:
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.shutdown(timeout)


_default = DefaultEngine()


def get_engine() -> Engine:
    """The engine in use: the one scoped by `with Engine():` in this context, else the default."""
    scoped = current_engine.get()
    return scoped if scoped is not None else _default.get()


def shutdown(timeout: float = 5.0) -> None:
    """Shut the default engine down; the next backward starts a fresh one."""
    _default.shutdown(timeout)


def set_loop(kind: str) -> None:
    """Choose the default engine's event loop ('uvloop' or 'asyncio'); restarts it if running."""
    loop_factory(kind)
    _default.shutdown()
    _default.loop_kind = kind
