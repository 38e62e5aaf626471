"""Small all-cpu graph tasks run on the calling thread, as PyTorch runs CPU backward.

Handing a pass to the cpu worker and its result back costs two thread wake-ups, 25-60 us each on
a loaded two-core machine: more than a ten-node backward pass itself. So a task that qualifies
runs on the caller's thread instead, with the caller standing in for the cpu worker:

- it holds the worker's ownership (`DeviceWorker.claim_ownership`), so no other thread runs cpu
  nodes meanwhile, and found the worker's queue empty;
- it is the worker's driver for the pass (`thread_state.worker`), so the nodes run through the
  worker's own queue in its order (AccumulateGrad first, then higher sequence number), and what
  asks for "the worker running this pass" (a reentrant backward inside a node, `queue_callback`,
  checkpointing's current task) finds it as it would on the worker's thread;
- the nodes run in a copy of the caller's context, as on the worker (whose wake-up carries the
  waking caller's context there); the engine's grad mode for the nodes stays in that copy.

A task qualifies when all of these hold, otherwise it takes the worker path unchanged:

- `Engine.inline_max_nodes` > 0 (0 disables inline runs) and the task has at most that many nodes;
- the gradients its nodes receive, counted from their recorded output shapes, total at most
  `Engine.inline_max_elements` elements (2**16 by default: a few hundred microseconds of NumPy
  work at most), which bounds how long an awaited pass can hold its caller's event loop;
- every node lives on `cpu`, and none is async (it runs as a task on the worker's loop), recorded
  on a side stream, needing an event loop of its own (`needs_event_loop`), marked
  `waits_on_other_threads` (SyncBatchNorm's all-reduce), or a leaf's accumulator with a
  post-accumulate hook so marked (DistributedDataParallel's, whose last one waits for the
  all-reduces): waits no element count bounds;
- the caller drives no worker (a backward inside a node keeps the reentrant path), has no stream
  made current, and sim devices do not follow the CUDA rules (`AUTOGRAD_ASYNC_SIM=cuda`, whose
  sanitizer checks which thread uses which stream);
- no trace sink is installed (`profiler.profile`): a profile shows each device's nodes on that
  device's worker track, apart from the caller's forward ops and awaits;
- the ownership is free within `CLAIM_TIMEOUT_S`, with nothing queued on the worker and no async
  node of another task running on its loop (its routing would wait for this run).
"""

from __future__ import annotations

import contextvars
from math import prod
from typing import TYPE_CHECKING

from ..backends.sim_mode import sim_mode_state
from ..backends.stream_context import stream_overrides
from ..core.graph import AccumulateGrad
from ..devices import CPU
from ..graph_task import GraphTask, TaskStart
from .device_worker import DeviceWorker, thread_state

if TYPE_CHECKING:
    from .engine import Engine

# How long a caller waits for the cpu worker to finish what it runs before taking the worker path.
CLAIM_TIMEOUT_S = 0.002
# The default bound on the gradient elements of an inline task (`Engine.inline_max_elements`).
DEFAULT_MAX_ELEMENTS = 2**16
# The default bound on the nodes of an inline task (`Engine.inline_max_nodes`).
DEFAULT_MAX_NODES = 64


def inline_runs_on(engine: Engine) -> bool:
    """Whether `engine` runs qualifying tasks inline at all now (the settings, not the task)."""
    return (
        engine.inline_max_nodes > 0
        and sim_mode_state.mode != "cuda"
        and engine.trace_sink is None
        and thread_state.worker is None
    )


def qualifies(engine: Engine, task: GraphTask) -> bool:
    """Whether `task` may run on the calling thread (before the ownership is claimed)."""
    nodes = task.dependencies  # every node of the task, the root included, before any deposit
    if len(nodes) > engine.inline_max_nodes or not inline_runs_on(engine):
        return False
    if stream_overrides.get() is not None:
        return False
    budget = engine.inline_max_elements
    for node in nodes:
        if node.device is not CPU or node.is_async or node._stream is not None:
            return False
        if node.needs_event_loop is not None or node.waits_on_other_threads:
            return False
        if type(node) is AccumulateGrad and _waits_on_other_threads(node):
            return False
        for shape, _ in node._out_meta:
            budget -= prod(shape)
        if budget < 0:
            return False
    return True


def _waits_on_other_threads(node: AccumulateGrad) -> bool:
    """Whether a post-accumulate hook of the leaf waits for other threads' work (DDP's, which
    waits for its all-reduces): unbounded, so never on an awaiting caller's thread."""
    hooks = node.variable._post_acc_hooks
    return bool(hooks) and any(getattr(h, "waits_on_other_threads", False) for h in hooks)


def claim(engine: Engine, task: GraphTask) -> DeviceWorker | None:
    """The cpu worker, its ownership now held by this thread, when `task` may run here."""
    if not qualifies(engine, task):
        return None
    worker = engine.worker(CPU)
    return worker if worker.claim_ownership(CLAIM_TIMEOUT_S) else None


def run_inline(worker: DeviceWorker, task: GraphTask, starts: list[TaskStart]) -> None:
    """Run `task` to its end on this thread as the driver of `worker`, whose ownership it holds
    (released here). The task's outcome is in `task.error`, as for a reentrant run."""
    try:
        contextvars.copy_context().run(_drive, worker, task, starts)
    finally:
        worker.release_ownership()
    if not task.finished:  # nothing else can hold its work: all of it was on the queue
        worker.engine.fail_task(
            task,
            RuntimeError(f"graph task {task.id} ended its inline run with work outstanding"),
            None,
            worker,
        )


def _drive(worker: DeviceWorker, task: GraphTask, starts: list[TaskStart]) -> None:
    thread_state.worker = worker
    try:
        worker.run_here(task, starts)
    finally:
        thread_state.worker = None
