"""A device worker: one thread, one event loop, one priority ready queue for one device.

Every node of every graph task that lives on the device runs under the worker's *ownership*: on its
thread, or (a small all-cpu task, see `inline.py`) on a caller's thread that holds the ownership
meanwhile, so that never two threads run one device's nodes at once. Other threads hand work in
through `submit` (a thread-safe inbox plus one wake-up of the loop), so a worker never blocks on
another; a gradient from another device arrives there as a settled `GradientFuture`.
The ready queue orders nodes as PyTorch's engine does: deeper reentrant tasks first, then higher
sequence number (AccumulateGrad has the highest).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from threading import get_ident
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from ..backends.sanitizer import enabled as sanitizer_enabled
from ..backends.stream_context import stream_overrides
from ..core.graph import Node
from ..devices import Device, backend_for, forget_sim_user, note_sim_user
from ..grad_mode import grad_enabled
from ..graph_task import GraphTask, in_task_context
from ..streams import streams_for
from .gpu_timing import timed_on_stream
from .handoff import GradientFuture
from .stream_sync import check_reads, check_writes, stream_of, sync_consumers
from .trace_events import Handoff

if TYPE_CHECKING:
    from .engine import Engine

START, ABANDON = "start", "abandon"
# Nodes run per pass before the worker yields to its event loop, so timers and I/O keep running.
PASS_BUDGET = 512
# How often an async node that finished while another thread owns the worker retries routing.
OWNERSHIP_RETRY_S = 0.0002


class ThreadState(threading.local):
    """Which worker the current thread drives, and how deep its blocking reentrant calls are."""

    def __init__(self) -> None:
        self.worker: DeviceWorker | None = None
        self.nesting = 0


thread_state = ThreadState()


class DeviceWorker:
    """Runs the backward nodes of one device on its own thread and event loop."""

    def __init__(self, engine: Engine, device: Device, loop_factory: Callable[[], Any]) -> None:
        self.engine = engine
        self.device = device
        self._device_name = str(device)
        self._streams = streams_for(device)
        self._host = device.type == "cpu"
        # Checked per access by the CUDA-faithful sim mode's sanitizer (fixed at first sim use).
        self._sanitized = sanitizer_enabled()
        # A backend whose library keeps its own current stream (CuPy): told which one to use.
        self._use_stream: Callable[[Any], None] | None = getattr(self._streams, "use", None)
        # Devices with real streams (cuda, the CUDA-faithful sim), and every worker while the
        # sanitizer checks accesses, run all nodes on the stream-aware path; the others only
        # nodes recorded on a side stream (one attribute read per node decides).
        self._execute: Callable[[Node, GraphTask, list], tuple] = (
            self._execute_on_streams
            if not self._streams.trivial or self._sanitized
            else self._execute_plain
        )
        # Gradients for host nodes wait for their device-to-host copy off this thread.
        self._defers_host = not self._host and not self._streams.trivial
        self._thread_names: dict[int, str] = {}
        self.ready: list = []
        self.inbox: deque = deque()
        self._tick = itertools.count().__next__
        self._loop_factory = loop_factory
        self._wake_pending = False
        self._resume_pending = False
        # Set once the loop has stopped for good; the engine then starts a new worker instead.
        self.dead = False
        self._waiter: threading.Event | None = None
        self._nested_tasks: set[GraphTask] = set()
        self._async_nodes: dict[asyncio.Task, GraphTask] = {}
        # Held by whichever thread runs this device's nodes: the worker's own while it drains its
        # queue, a caller's while it runs a small task inline. Never waited for on the loop.
        self.ownership = threading.Lock()
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self.running_task: GraphTask | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.nodes_run = 0
        self.busy_ns = 0
        self.handoffs_in = 0
        self.handoffs_out = 0

    # -------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 10.0) -> None:
        """Start the thread and its loop; returns once the loop is running."""
        self.thread = threading.Thread(
            target=self._main, name=f"autograd-async:{self.device}", daemon=True
        )
        self.thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"worker for {self.device} did not start within {timeout} s")
        if self._start_error is not None:
            raise RuntimeError(f"worker for {self.device} failed to start") from self._start_error
        if self.device.type == "sim":  # the sim device count may not drop below a running worker
            note_sim_user(self.device, self)

    def _main(self) -> None:
        thread_state.worker = self
        self.note_driver_thread()
        try:
            # Work launched from this thread runs on its device (CUDA's per-thread rule).
            backend_for(self.device).use_device(self.device)
            loop = self._loop_factory()
            asyncio.set_event_loop(loop)
            self.loop = loop
        except BaseException as exc:  # noqa: BLE001 - reported to the starter
            self._start_error = exc
            self._started.set()
            return
        self._started.set()
        death: BaseException | None = None
        try:
            loop.run_forever()
        except BaseException as exc:
            death = exc  # an error escaped a callback and killed the loop: report, then re-raise
            raise
        finally:
            self._retire(loop, death)

    def _retire(self, loop: asyncio.AbstractEventLoop, death: BaseException | None) -> None:
        """The loop has stopped for good: fail all work held or later sent here, close the loop.

        `dead` is set before the inbox is drained, and `submit` appends before it reads `dead`,
        so every item lands either in this drain or in the submitter's own: none waits for a
        wake-up that will never run.
        """
        self.dead = True
        if self.device.type == "sim":
            forget_sim_user(self.device, self)
        self._fail_held(death)
        for pending in asyncio.all_tasks(loop):
            pending.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()

    def _fail_held(self, death: BaseException | None) -> None:
        """Fail every graph task with work queued, in flight or arriving on this dead worker."""
        from .engine import EngineClosedError  # noqa: PLC0415 - engine imports this module

        tasks = {entry[3] for entry in self.ready}
        tasks.update(self._async_nodes.values())
        tasks.update(task_of(item) for item in self._drain_inbox())
        self.ready.clear()
        why = "stopped" if death is None else f"died of {type(death).__name__}: {death}"
        for task in tasks:
            error = EngineClosedError(
                f"the {self.device} worker {why} while graph task {task.id} had work queued on it"
            )
            error.__cause__ = death
            if task.fail(error) and task.on_finish is not None:
                task.on_finish(error)

    def _drain_inbox(self) -> list:
        """Take every queued item; safe while other threads take or add items at the same time."""
        taken = []
        inbox = self.inbox
        while True:
            try:
                taken.append(inbox.popleft())
            except IndexError:
                return taken

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join the thread."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:
                pass
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    @property
    def alive(self) -> bool:
        """True while the worker's thread runs."""
        return self.thread is not None and self.thread.is_alive()

    # ----------------------------------------------------------------- inbox
    def submit(self, item: tuple | GradientFuture) -> None:
        """Hand an item (a start, an abandon, or a settled gradient future) to this worker from
        any thread; it runs on the worker's thread."""
        self.inbox.append(item)
        if self.dead:  # its loop will never run this: fail it here (see `_retire`)
            for taken in self._drain_inbox():
                self.engine.reject(taken, None, self)
            return
        waiter = self._waiter
        if waiter is not None:
            waiter.set()
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self._started_loop().call_soon_threadsafe(self._on_wake)
            except RuntimeError as exc:  # loop closed: the engine is shutting down
                self._wake_pending = False
                self.engine.reject(item, exc, self)

    def prewake(self) -> None:
        """Start waking the thread now, ahead of work about to be submitted from this thread.

        Waking an idle thread costs tens of microseconds; sent before the caller prepares a task,
        that wait overlaps the preparation instead of following it. A wake that finds the inbox
        still empty costs one empty pass, and the submit that follows then wakes the thread again.
        """
        if self._wake_pending or self.dead or self.thread is threading.current_thread():
            return
        self._wake_pending = True
        try:
            self._started_loop().call_soon_threadsafe(self._on_wake)
        except RuntimeError:  # loop closed: the submit that follows reports it
            self._wake_pending = False

    def wake_waiter(self) -> None:
        """Wake a blocking reentrant wait on this worker (its task finished elsewhere)."""
        waiter = self._waiter
        if waiter is not None:
            waiter.set()

    def _on_wake(self) -> None:
        self._wake_pending = False
        if self.dead:  # a wake-up run while the dead loop winds down: `_retire` fails the work
            return
        if not self.ownership.acquire(blocking=False):
            return  # a caller runs nodes inline: `release_ownership` wakes this loop again
        try:
            self._take_inbox()
            self._drain_ready()
        finally:
            self.ownership.release()

    def claim_ownership(self, timeout: float) -> bool:
        """Take the right to run this device's nodes from another thread (see `inline.py`).

        True when claimed within `timeout` s with nothing queued or in flight here, so that the
        claimer's task is the only work on the queue. Release with `release_ownership`.
        """
        if not self.ownership.acquire(timeout=timeout):
            return False
        if self.ready or self._async_nodes or self.dead:
            self.release_ownership()
            return False
        return True

    def release_ownership(self) -> None:
        """Give the ownership back; wake the loop if work arrived for it meanwhile."""
        self.ownership.release()
        if (self.inbox or self.ready) and not self._wake_pending and not self.dead:
            self._wake_pending = True
            try:
                self._started_loop().call_soon_threadsafe(self._on_wake)
            except RuntimeError:  # loop closed: `_retire` fails what it held
                self._wake_pending = False

    def _take_inbox(self) -> None:
        inbox = self.inbox
        while inbox:
            item = inbox.popleft()
            try:
                if type(item) is GradientFuture:
                    self._receive(item)
                elif item[0] is START:
                    self._begin(item[1], item[2])
                else:
                    self._abandon(item[1])
            except BaseException as exc:  # noqa: BLE001 - fails the task, never the worker
                self.engine.fail_task(task_of(item), exc, None, self)

    def _begin(self, task: GraphTask, starts: list) -> None:
        if task.finished:
            return
        pushed = 0
        for node, nr, grad in starts:
            inputs = task.deposit(node, nr, grad)
            if inputs is not None:
                self.push(task, node, inputs)
                pushed += 1
        if pushed != 1 and task.add_outstanding(pushed - 1):
            self.engine.finish_task(task)

    def _receive(self, future: GradientFuture) -> None:
        task = future.task
        self.handoffs_in += 1
        if task.finished:
            return
        grad = future.result()  # the error that kept the gradient from arriving fails the task
        node = future.node
        sink = self.engine.trace_sink
        if sink is not None:
            src_worker = future.src_worker
            sink.record(
                Handoff(
                    task.id,
                    str(src_worker.device),
                    str(self.device),
                    id(future.src_node),
                    id(node),
                    future.sent_ns,
                    time.perf_counter_ns(),
                    src_worker.thread.ident or 0,
                    threading.get_ident(),
                )
            )
        inputs = task.deposit(node, future.input_nr, grad)
        if inputs is not None:
            self.push(task, node, inputs)
        elif task.add_outstanding(-1):
            self.engine.finish_task(task)

    def _abandon(self, task: GraphTask) -> None:
        for pending, owner in list(self._async_nodes.items()):
            if owner is task:
                pending.cancel()
        if self.ready and task.finished:
            self.ready = [entry for entry in self.ready if entry[3] is not task]
            heapify(self.ready)

    # ------------------------------------------------------------------ queue
    def push(self, task: GraphTask, node: Node, inputs: list) -> None:
        """Queue a ready node (worker thread only)."""
        key = -((task.reentrant_depth << 64) | node._seq)
        heappush(self.ready, (key, self._tick(), node, task, inputs))

    def _run_ready(self) -> None:
        self._resume_pending = False
        if not self.ready or not self.ownership.acquire(blocking=False):
            return  # nothing to do, or a caller runs nodes inline and wakes this loop after
        try:
            self._drain_ready()
        finally:
            self.ownership.release()

    def _drain_ready(self) -> None:
        """Run queued nodes, up to `PASS_BUDGET`, then yield to the loop (ownership held)."""
        ready = self.ready
        if not ready:
            return
        started = time.perf_counter_ns()
        budget = PASS_BUDGET
        while ready and budget > 0:
            _, _, node, task, inputs = heappop(ready)
            # A node that `_execute` hands back outranks everything queued: run it without a
            # round trip through the heap (the common case in chains).
            while node is not None:
                budget -= 1
                node, inputs = self._execute(node, task, inputs)
                if node is not None and budget <= 0:
                    self.push(task, node, inputs)  # out of budget: it waits its turn in the queue
                    break
        self.busy_ns += time.perf_counter_ns() - started
        if ready and not self._resume_pending:
            self._resume_pending = True
            self._started_loop().call_soon(self._run_ready)

    def _execute_plain(self, node: Node, task: GraphTask, inputs: list) -> tuple:
        """Run one node and route its gradients; returns a node to run next directly, if any.

        `_execute` is this, or `_execute_on_streams` where every node runs on the stream path.
        """
        if task.finished:
            return None, None
        if node.is_async:
            self._spawn_async(node, task, inputs)
            return None, None
        if node._stream is not None:  # recorded on a side stream: its backward runs there
            return self._execute_on_streams(node, task, inputs)
        if grad_enabled.get() is not task.create_graph:
            grad_enabled.set(task.create_graph)
        previous = self.running_task
        self.running_task = task
        sink = self.engine.trace_sink
        try:
            if task.context is not None:
                outputs = in_task_context(task, _evaluate, task, node, inputs)
            elif sink is None:
                outputs = task.evaluate(node, inputs)
            else:
                begun = perf_counter_ns()
                outputs = task.evaluate(node, inputs)
                # A plain tuple (see trace_events.RawNodeRun): the cheapest record there is.
                sink.record((node, self, get_ident(), task.id, begun, perf_counter_ns()))
        except BaseException as exc:  # noqa: BLE001 - a node's failure fails its task only
            self.running_task = previous
            self.engine.fail_task(task, exc, node, self)
            return None, None
        self.running_task = previous
        self.nodes_run += 1
        try:  # `_route_or_fail` written out: one call less per node on the common path
            return self._route(task, node, outputs)
        except BaseException as exc:  # noqa: BLE001 - e.g. gradients that cannot be summed
            self.engine.fail_task(task, exc, node, self)
            return None, None

    def _execute_on_streams(self, node: Node, task: GraphTask, inputs: list) -> tuple:
        """`_execute` on the node's stream: gradients read and written there, consumers' streams
        made to wait for it before the gradients reach them (see stream_sync)."""
        if task.finished:
            return None, None
        if node.is_async:
            self._spawn_async(node, task, inputs)
            return None, None
        backend = self._streams
        device = self.device
        default = backend.default_stream(device)
        stream = node._stream
        # The stream current before (another side stream's, when this node runs inside a nested
        # backward of a node on it) is the one restored after, for the library and for CuPy.
        outer = stream_overrides.get()
        before = default if outer is None else outer.get(device, default)
        if stream is None or stream is default:
            stream = default
            token = stream_overrides.set(None)
        else:
            task.note_stream(device, stream)
            token = stream_overrides.set({device: stream})
        # Set when the backend's own current stream must switch to the node's and back.
        use_stream = self._use_stream if stream is not before else None
        if use_stream is not None:
            use_stream(stream)
        if grad_enabled.get() is not task.create_graph:
            grad_enabled.set(task.create_graph)
        previous = self.running_task
        self.running_task = task
        try:
            if self._sanitized:
                check_reads(node, stream, inputs)
            sink = self.engine.trace_sink
            if task.context is not None:
                overrides = stream_overrides.get()
                outputs = in_task_context(task, _evaluate_on, overrides, task, node, inputs)
            elif sink is None:
                outputs = task.evaluate(node, inputs)
            else:
                begun = perf_counter_ns()
                if not self._host and getattr(sink, "gpu_timing", False):
                    outputs = timed_on_stream(
                        backend,
                        stream,
                        self._device_name,
                        node,
                        task.id,
                        begun,
                        lambda: task.evaluate(node, inputs),
                        sink,
                    )
                else:
                    outputs = task.evaluate(node, inputs)
                sink.record((node, self, get_ident(), task.id, begun, perf_counter_ns()))
            if self._sanitized:
                check_writes(node, stream, outputs)
            sync_consumers(node, stream, backend, outputs)
        except BaseException as exc:  # noqa: BLE001 - a node's failure fails its task only
            self.engine.fail_task(task, exc, node, self)
            return None, None
        finally:
            self.running_task = previous
            stream_overrides.reset(token)
            if use_stream is not None:
                use_stream(before)
        self.nodes_run += 1
        return self._route_or_fail(task, node, outputs)

    def _settle_when_copied(
        self, node: Node, target: DeviceWorker, future: GradientFuture, grad: Any
    ) -> None:
        """Settle `future` with a gradient copied to host memory once its copy has completed.

        The copy runs on the node's stream without the host waiting; an event recorded after it
        reaches the target's loop through the backend's completion callback, which settles the
        future there, so neither this thread nor the target's blocks on the device.
        """
        backend = self._streams
        event = backend.new_event()
        backend.record(event, stream_of(node, backend))
        try:
            backend.when_complete(event, target.loop, lambda: future.set_result(grad))
        except RuntimeError as exc:  # the target's loop has closed
            self.engine.reject(future, exc, target)

    def _route_or_fail(self, task: GraphTask, node: Node, outputs: tuple) -> tuple:
        """`_route`, failing the task (not the worker) when the gradients cannot be routed."""
        try:
            return self._route(task, node, outputs)
        except BaseException as exc:  # noqa: BLE001 - e.g. gradients that cannot be summed
            self.engine.fail_task(task, exc, node, self)
            return None, None

    def _route(self, task: GraphTask, node: Node, outputs: tuple) -> tuple:
        """Deposit gradients for local nodes, hand the rest to their devices' workers.

        Returns the one node made ready here when it outranks everything queued (so the caller
        runs it at once), else (None, None).
        """
        edges = node._edges
        if len(edges) == 2 and len(outputs) == 1:  # a link of a chain: the common case
            nxt = edges[0]
            nr = edges[1]
            if nxt is not None and nxt.device is self.device:
                inputs = task.deposit(nxt, nr, outputs[0])
                if inputs is None:  # it waits for more gradients: this unit of work ends
                    if task.add_outstanding(-1):
                        self.engine.finish_task(task)
                    return None, None
                ready = self.ready
                if not ready or -((task.reentrant_depth << 64) | nxt._seq) < ready[0][0]:
                    return nxt, inputs  # this unit of work continues as that node
                self.push(task, nxt, inputs)
                return None, None
        first: tuple[Node, list] | None = None  # the first local node made ready, its inputs
        more = handoffs = None
        if outputs:
            device = self.device
            pairs = iter(edges)
            for nxt, nr, grad in zip(pairs, pairs, outputs):
                if nxt is None:
                    continue
                if nxt.device is device:
                    inputs = task.deposit(nxt, nr, grad)
                    if inputs is not None:
                        if first is None:
                            first = (nxt, inputs)
                        elif more is None:
                            more = [(nxt, inputs)]
                        else:
                            more.append((nxt, inputs))
                elif handoffs is None:
                    handoffs = [(nxt, nr, grad)]
                else:
                    handoffs.append((nxt, nr, grad))
        if first is not None and more is None and handoffs is None:
            ready = self.ready
            if not ready or -((task.reentrant_depth << 64) | first[0]._seq) < ready[0][0]:
                return first  # this unit of work continues as that node
            self.push(task, *first)
            return None, None
        delta = -1
        if first is not None:
            self.push(task, *first)
            delta += 1
            if more is not None:
                for nxt, inputs in more:
                    self.push(task, nxt, inputs)
                delta += len(more)
        if handoffs is None:
            if delta and task.add_outstanding(delta):
                self.engine.finish_task(task)
            return None, None
        # Count the handoffs before sending them, so a fast receiver cannot finish the task early.
        task.add_outstanding(delta + len(handoffs))
        sent = perf_counter_ns() if self.engine.trace_sink is not None else 0
        for nxt, nr, grad in handoffs:
            self.handoffs_out += 1
            target = self.engine.worker(nxt.device)
            future = GradientFuture(task, nxt, nr, node, self, sent, target.submit)
            if self._defers_host and target._host:
                self._settle_when_copied(node, target, future, grad)
            else:
                future.set_result(grad)
        return None, None

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        """The worker's event loop, which `start` made (an error naming the worker before)."""
        loop = self.loop
        if loop is None:
            raise RuntimeError(f"the {self.device} worker has no event loop: it was never started")
        return loop

    def thread_name(self, ident: int) -> str:
        """The name of a thread that has driven this worker (its own, or a reentrant helper)."""
        return self._thread_names.get(ident, f"thread {ident}")

    def note_driver_thread(self) -> None:
        """Remember the calling thread's name for traces (it is about to drive this worker)."""
        names = self._thread_names
        if len(names) > 1024:  # reentrant helper threads come and go: keep the memo bounded
            own = self.thread.ident if self.thread is not None else None
            own_name = names.get(own) if own is not None else None
            names.clear()
            if own is not None and own_name is not None:
                names[own] = own_name
        names[get_ident()] = threading.current_thread().name

    def _record_run(self, sink: Any, node: Node, task: GraphTask, begun: int) -> None:
        sink.record((node, self, get_ident(), task.id, begun, perf_counter_ns()))

    # ------------------------------------------------------------ async nodes
    def _spawn_async(self, node: Node, task: GraphTask, inputs: list) -> None:
        if task in self._nested_tasks:
            self.engine.fail_task(
                task,
                RuntimeError(
                    f"{node.name()} has an async backward, which cannot run inside a blocking "
                    f"backward()/grad() called on the {self.device} worker thread; "
                    "use `await backward_async()` / `await grad_async()` there instead"
                ),
                node,
                self,
            )
            return
        if self.thread is not threading.current_thread():
            # Another thread drives this worker (an inline caller's reentrant backward, a helper
            # thread): the loop's tasks are made on the loop's own thread.
            self._started_loop().call_soon_threadsafe(self._create_async_node, node, task, inputs)
        else:
            self._create_async_node(node, task, inputs)

    def _create_async_node(self, node: Node, task: GraphTask, inputs: list) -> None:
        if task.finished:
            return
        context = task.context
        context = None if context is None else context.copy()
        pending = self._started_loop().create_task(
            self._run_async_node(node, task, inputs), context=context
        )
        self._async_nodes[pending] = task
        pending.add_done_callback(self._async_nodes.pop)

    async def _run_async_node(self, node: Node, task: GraphTask, inputs: list) -> None:
        from .engine import reentrant_depth  # noqa: PLC0415

        reentrant_depth.set(task.reentrant_depth)
        grad_enabled.set(task.create_graph)
        begun = time.perf_counter_ns()
        try:
            ready_inputs = task.before_backward(node, inputs)
            if ready_inputs is None:
                outputs: tuple = ()
            else:
                outputs = task.after_backward(
                    node, ready_inputs, await node.backward(*ready_inputs)
                )
        except BaseException as exc:  # noqa: BLE001
            self.engine.fail_task(task, exc, node, self)
            if isinstance(exc, asyncio.CancelledError):
                return
            return
        if task.finished:
            return
        sink = self.engine.trace_sink
        if sink is not None:
            self._record_run(sink, node, task, begun)
        self.nodes_run += 1
        while not self.ownership.acquire(blocking=False):  # never block the loop waiting for it
            await asyncio.sleep(OWNERSHIP_RETRY_S)
        try:
            try:
                nxt, nxt_inputs = self._route(task, node, outputs)
            except BaseException as exc:  # noqa: BLE001
                self.engine.fail_task(task, exc, node, self)
                return
            if nxt is not None:
                self.push(task, nxt, nxt_inputs)
            self._drain_ready()
        finally:
            self.ownership.release()

    # ---------------------------------------------------- driven by a caller
    def run_here(self, task: GraphTask, starts: list) -> None:
        """Start `task` and run this worker's queue empty on the calling thread (see inline.py).

        The caller holds the ownership, found the queue empty and drives this worker meanwhile
        (`thread_state.worker`), so the nodes run in the queue's order exactly as on the worker's
        thread, a reentrant backward inside one included.
        """
        task.add_outstanding(1)
        try:
            self._begin(task, starts)
        except BaseException as exc:  # noqa: BLE001 - fails the task, as `_take_inbox` does
            self.engine.fail_task(task, exc, None, self)
        started = time.perf_counter_ns()
        ready = self.ready
        try:
            while ready:
                _, _, node, owner, inputs = heappop(ready)
                while node is not None:
                    node, inputs = self._execute(node, owner, inputs)
        finally:
            self.busy_ns += time.perf_counter_ns() - started

    # ------------------------------------------------------ reentrant backward
    def run_nested(self, task: GraphTask, check_open: Callable[[], None]) -> None:
        """Drive this worker from inside a node until `task` finishes (blocking reentrant backward).

        The caller is the thread that drives this worker, so no other thread touches its queue.
        Nested nodes outrank the parent's (deeper reentrant depth), as in PyTorch.
        """
        waiter = threading.Event()
        previous_waiter = self._waiter
        self._waiter = waiter
        self._nested_tasks.add(task)
        token = grad_enabled.set(grad_enabled.get())
        try:
            while not task.finished:
                waiter.clear()
                self._take_inbox()
                if self.ready:
                    _, _, node, owner, inputs = heappop(self.ready)
                    while node is not None:
                        node, inputs = self._execute(node, owner, inputs)
                    continue
                if task.finished:
                    break
                waiter.wait(0.05)
                check_open()
        finally:
            grad_enabled.reset(token)
            self._nested_tasks.discard(task)
            self._waiter = previous_waiter


def _evaluate(task: GraphTask, node: Node, inputs: list) -> tuple:
    """`task.evaluate(node, inputs)` as a plain function: compiled, a bound method of the task's
    extension type read as a value would not be one (see device_worker.pxd)."""
    return task.evaluate(node, inputs)


def _evaluate_on(overrides: Any, task: GraphTask, node: Node, inputs: list) -> tuple:
    """`task.evaluate` with the worker's stream overrides, inside the task's own context."""
    stream_overrides.set(overrides)
    return task.evaluate(node, inputs)


def task_of(item: tuple | GradientFuture) -> GraphTask:
    """The graph task an inbox item belongs to."""
    return item.task if isinstance(item, GradientFuture) else item[1]
