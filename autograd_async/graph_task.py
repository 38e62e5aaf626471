"""The bookkeeping of one backward pass, in plain synchronous code.

A `GraphTask` counts dependencies from its roots, buffers the gradients arriving at each node,
decides which nodes must run (all of them for `backward`, only those leading to `inputs` for
`grad`), captures the gradients `grad` returns, and knows when it is finished. It owns no threads:
the engine's workers call `evaluate` for each ready node on the node's device thread and route what
it returns.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from .backends.sanitizer import enabled as sanitizer_enabled
from .core.graph import GraphRoot, Node  # noqa: F401 - GraphRoot: re-exported
from .core.history import anomaly_parent
from .core.tensor import Tensor
from .devices import Device, check_entered
from .grad_mode import grad_enabled
from .node_evaluation import (
    add_on_stream,
    check_nan,
    materialize,
    run_node_pre_hooks,
    run_post_hooks,
    run_tensor_pre_hooks,
    validate_outputs,
)
from .ops.transfer import host_reads_outputs

_task_ids = itertools.count(1)
# Callers on any thread start tasks: free-threaded CPython does not promise a shared iterator's
# `next` is atomic, so the ids are taken under a lock (one per task, not per node).
_task_ids_lock = threading.Lock()

# Whether backward passes started here run their nodes in a copy of the starting context (see
# `nodes_run_in_caller_context`).
_caller_context_wanted: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "autograd_async_nodes_in_caller_context", default=False
)


@contextlib.contextmanager
def nodes_run_in_caller_context() -> Iterator[None]:
    """Backward passes started in this block run each node in a copy of the context they were
    started from, so that what the caller set in context variables (a NumPy allocation handler
    counting a call's memory, say) holds for the nodes' work on the device threads too.

    Grad mode and the current stream are still the engine's for each node. Costs one context
    copy per node, so it is for the callers that need it.
    """
    token = _caller_context_wanted.set(True)
    try:
        yield
    finally:
        _caller_context_wanted.reset(token)


def caller_context() -> contextvars.Context | None:
    """The context a new graph task should run its nodes in, or None for the engine's own."""
    return contextvars.copy_context() if _caller_context_wanted.get() else None


def in_task_context(task: GraphTask, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a fresh copy of the task's context (a task's nodes may run on several
    threads at once, and one Context cannot be entered twice), with the engine's grad mode."""
    context = task.context
    if context is None:  # finished meanwhile: its remaining work is discarded anyway
        return fn(*args)
    return context.copy().run(_with_grad_mode, task.create_graph, fn, args)


def _with_grad_mode(create_graph: bool, fn: Callable[..., Any], args: tuple) -> Any:
    grad_enabled.set(create_graph)
    return fn(*args)


class TaskStart(NamedTuple):
    """A gradient deposited into input `nr` of `node` as its graph task starts (None: the node
    is a `GraphRoot`, which makes its own)."""

    node: Node
    nr: int
    grad: Any


class RunnableTask:
    """What the engine runs: a graph task and the gradients it starts from."""

    __slots__ = ("task", "starts")

    def __init__(self, task: GraphTask, starts: list[TaskStart]) -> None:
        self.task = task
        self.starts = starts


class GraphTask:
    """One backward pass: dependencies, input buffers, captures, completion and its error."""

    __slots__ = (
        "id",
        "root",
        "keep_graph",
        "create_graph",
        "dependencies",
        "buffers",
        "exec_info",
        "captures",
        "captured",
        "reentrant_depth",
        "anomaly",
        "check_nan",
        "_special",
        "_outstanding",
        "_lock",
        "error",
        "finished",
        "on_finish",
        "context",
        "caller_streams",
        "side_streams",
        "checks_streams",
        "final_callbacks",
        "__weakref__",
    )

    def __init__(
        self,
        root: Node,
        *,
        keep_graph: bool,
        create_graph: bool,
        reentrant_depth: int = 0,
        anomaly: bool = False,
        check_nan: bool = True,
    ) -> None:
        with _task_ids_lock:
            self.id = next(_task_ids)
        self.root = root
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.reentrant_depth = reentrant_depth
        self.anomaly = anomaly
        self.check_nan = check_nan
        # One read per node instead of three: create_graph, anomaly mode or captures (`capture`).
        self._special = create_graph or anomaly
        self.dependencies = compute_dependencies(root)
        self.buffers: dict[Node, list] = {}
        self.exec_info: dict[Node, bool] | None = None
        self.captures: dict[Node, list[tuple[int, int]]] | None = None
        self.captured: list[Any] = []
        self._outstanding = 0
        self._lock = threading.Lock()
        self.error: BaseException | None = None
        self.finished = False
        # Called once with the task's error (None: success) when it finishes or fails.
        self.on_finish: Callable[[BaseException | None], None] | None = None
        # The caller's context, which nodes run in when it set context-dependent state.
        self.context: contextvars.Context | None = None
        # The caller's current streams when it started the task (None: default streams), and
        # the side streams nodes ran on, by device: the engine orders them at start and finish.
        self.caller_streams: dict[Device, Any] | None = None
        self.side_streams: dict[Device, set] | None = None
        self.checks_streams = sanitizer_enabled()
        self.final_callbacks: list | None = None  # `queue_callback`'s, run once all nodes ran

    # ------------------------------------------------------------------ set-up
    def capture(self, targets: Sequence[tuple[Node, int]], run_targets: bool = False) -> None:
        """Record gradients arriving at `targets` and run only the nodes that lead to them.

        `run_targets` runs the target nodes too (`backward(inputs=...)` accumulates into leaves).
        """
        self.captures = {}
        self._special = True
        self.captured = [None] * len(targets)
        for index, (node, nr) in enumerate(targets):
            self.captures.setdefault(node, []).append((nr, index))
        # Before any deposit, `dependencies` still counts every edge: reuse it.
        self.exec_info = compute_exec_info(self.root, self.captures, run_targets, self.dependencies)

    # ------------------------------------------------------------- accounting
    def add_outstanding(self, delta: int) -> bool:
        """Adjust the count of queued nodes and in-flight handoffs; True when it reaches zero."""
        with self._lock:
            self._outstanding += delta
            return self._outstanding == 0

    def fail(self, error: BaseException) -> bool:
        """Record the first error; True if this call is the one that failed the task."""
        with self._lock:
            if self.finished:
                return False
            self.finished = True
            self.error = error
            self.context = None  # what the caller's context holds need not outlive the task
            return True

    def add_final_callback(self, callback: Any) -> None:
        """Run `callback()` when the task's last node has run, before the caller resumes."""
        with self._lock:
            if self.final_callbacks is None:
                self.final_callbacks = []
            self.final_callbacks.append(callback)

    def run_final_callbacks(self) -> None:
        """Call the queued callbacks in order; one may queue more, which run after it."""
        done = 0
        while True:
            with self._lock:
                callbacks = self.final_callbacks
                if callbacks is None or done >= len(callbacks):
                    self.final_callbacks = None
                    return
                callback = callbacks[done]
            done += 1
            callback()

    def complete(self) -> bool:
        """Mark the task done; True if this call finished it (it had not failed first)."""
        with self._lock:
            if self.finished:
                return False
            self.finished = True
            self.context = None  # what the caller's context holds need not outlive the task
            return True

    def note_stream(self, device: Device, stream: Any) -> None:
        """A node ran on `stream`, a side stream of `device` (the caller waits for it at end)."""
        with self._lock:
            if self.side_streams is None:
                self.side_streams = {}
            self.side_streams.setdefault(device, set()).add(stream)

    # --------------------------------------------------------------- buffers
    def deposit(self, node: Node, nr: int, grad: Any) -> list | None:
        """Add `grad` to `node`'s input `nr`; returns its inputs when the node becomes ready."""
        deps = self.dependencies
        left = deps[node] - 1
        buffers = self.buffers
        if left == 0:
            del deps[node]
            buf = buffers.pop(node, None)
            if buf is None:  # the only gradient this node receives: no buffer needed
                slots = len(node._out_meta)
                if slots <= 1:
                    return [grad]
                buf = [None] * slots
                buf[nr] = grad
                return buf
        else:
            deps[node] = left
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * max(len(node._out_meta), 1)
        if grad is not None:
            held = buf[nr]
            if held is None:
                buf[nr] = grad
            else:
                buf[nr] = add_on_stream(node, held, grad, self.checks_streams)
        return buf if left == 0 else None

    # -------------------------------------------------------------- evaluate
    def evaluate(self, node: Node, inputs: list) -> tuple:
        """Run one node: hooks, captures, its backward, checks. Returns its output gradients.

        The result pairs with `node.next_functions` (`node._edges`, two entries an edge); an
        empty tuple means nothing flows on.
        The common case (one gradient in, no hooks, captures, create_graph or anomaly mode) takes
        a short path: backward graphs are mostly chains of such nodes.
        """
        device = node.device
        if device._entry is not None:  # CUDA's rule: this thread must have entered it
            check_entered(device, node.name())
        if len(inputs) != 1 or node._hooks is not None:
            return self._evaluate_general(node, inputs)
        grad = inputs[0]
        if grad is None:
            return self._evaluate_general(node, inputs)
        if self._special and self._takes_general_path(node):
            return self._evaluate_general(node, inputs)
        outputs = node.backward(grad)
        if type(outputs) is not tuple:
            outputs = (outputs,)
        edges = node._edges
        count = len(edges)
        if len(outputs) * 2 != count:
            self.after_backward(node, inputs, outputs)  # raises the count error
        if count == 2:  # a chain's link: no zip to walk
            nxt = edges[0]
            nr = edges[1]
            g = outputs[0]
            if g is not None and nxt is not None:
                shape, dtype = nxt._out_meta[nr]
                got = g.dtype
                if g.shape != shape or (got is not dtype and got != dtype) or type(g) is Tensor:
                    outputs = validate_outputs(node, outputs, False)
        else:
            pairs = iter(edges)
            for nxt, nr, g in zip(pairs, pairs, outputs):
                if g is not None and nxt is not None:
                    shape, dtype = nxt._out_meta[nr]
                    got = g.dtype
                    if g.shape != shape or (got is not dtype and got != dtype) or type(g) is Tensor:
                        outputs = validate_outputs(node, outputs, False)
                        break
        if not self.keep_graph:
            node.release_saved()
        return outputs

    def _evaluate_general(self, node: Node, given: list) -> tuple:
        inputs = self.before_backward(node, given)
        if inputs is None:
            return ()
        if not node.runs_without_grad and all(g is None for g in inputs):
            outputs = (None,) * (len(node._edges) >> 1)
        elif self.anomaly or (node._hooks is not None and node._hooks.post):
            token = host_reads_outputs.set(True)  # read on the host before the engine routes
            parent = anomaly_parent.set(node) if self.anomaly else None
            try:
                outputs = node.backward(*inputs)
            finally:
                if parent is not None:
                    anomaly_parent.reset(parent)
                host_reads_outputs.reset(token)
        else:
            outputs = node.backward(*inputs)
        return self.after_backward(node, inputs, outputs)

    def _takes_general_path(self, node: Node) -> bool:
        """Whether create_graph, anomaly mode or `grad()`'s captures concern `node` (the task
        is `_special`): then it runs on the general path."""
        if self.create_graph or self.anomaly:
            return True
        captures = self.captures
        return captures is not None and (node in captures or not self._needed(node))

    def _needed(self, node: Node) -> bool:
        """Whether a pass that captures gradients (`grad()`) runs `node`: it leads to a target."""
        exec_info = self.exec_info  # set with the captures
        return exec_info is not None and exec_info.get(node, False)

    def before_backward(self, node: Node, inputs: list) -> list | None:
        """Pre-hooks and captures; None when the node must not run (not needed by `grad`).

        As in PyTorch: tensor hooks and retain_grad run first and captures see their result; a
        node that `grad` does not need stops there, so its own pre-hooks never run.
        """
        hooks = node._hooks
        captures = self.captures
        if captures is not None:
            found = captures.get(node)
            if found is None and not self._needed(node):
                return None  # PyTorch never queues such a node: none of its hooks run
        if hooks is not None and (hooks.tensor_pre or hooks.retains_grad):
            inputs = run_tensor_pre_hooks(node, hooks, inputs)
        if captures is not None:
            if found is not None:
                for nr, index in found:
                    held = self.captured[index]
                    g = inputs[nr]
                    self.captured[index] = g if held is None or g is None else held + g
            if not self._needed(node):
                return None
        if hooks is not None and hooks.pre:
            inputs = run_node_pre_hooks(node, hooks, inputs)
        # A freed node runs again: it raises PyTorch's error only if its backward reads what was
        # freed (`Op.saved`, a Function's `saved_tensors`), as PyTorch's nodes do.
        if (
            len(inputs) > 1
            and getattr(node, "materialize_grads", True)
            and any(g is None for g in inputs)
            and not all(g is None for g in inputs)
        ):
            inputs = materialize(node, inputs, self.create_graph)
        return inputs

    def after_backward(self, node: Node, inputs: list, outputs: Any) -> tuple:
        """Check what backward returned, run post-hooks, free saved tensors."""
        if type(outputs) is not tuple:
            outputs = (outputs,)
        expected = len(node._edges) >> 1
        if len(outputs) != expected:
            raise RuntimeError(
                f"function {node.name()} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(outputs)})"
            )
        outputs = validate_outputs(node, outputs, self.create_graph)
        hooks = node._hooks
        if hooks is not None and hooks.post:
            outputs = run_post_hooks(node, hooks, outputs, inputs)
        if self.anomaly and self.check_nan:  # after post-hooks, as PyTorch checks
            check_nan(node, outputs)
        if not self.keep_graph:
            node.release_saved()
        return outputs


# ------------------------------------------------------------------ graph walks
def compute_dependencies(root: Node) -> dict[Node, int]:
    """How many edges lead into each node reachable from `root` (no recursion)."""
    deps: dict[Node, int] = {}
    stack = [root]
    pop, push, get = stack.pop, stack.append, deps.get
    while stack:
        for nxt in pop()._edges[::2]:
            if nxt is not None:
                count = get(nxt)
                if count is None:  # first edge into it: walk on from it once
                    deps[nxt] = 1
                    push(nxt)
                else:
                    deps[nxt] = count + 1
    return deps


def compute_exec_info(
    root: Node,
    captures: dict[Node, list],
    run_targets: bool,
    dependencies: dict[Node, int] | None = None,
) -> dict[Node, bool]:
    """Which nodes lie on a path from `root` to a capture target (no recursion).

    Nodes are put in topological order by counting down `dependencies` (computed when not given),
    then marked from the leaves up: a node is needed when an edge leads to a target or to a needed
    node. `run_targets` also runs the targets (`backward(inputs=...)` accumulates into leaves).
    """
    remaining = dict(compute_dependencies(root) if dependencies is None else dependencies)
    order = [root]
    append = order.append
    for node in order:  # grows while iterating: each node once, after every node that feeds it
        for nxt in node._edges[::2]:
            if nxt is not None:
                left = remaining[nxt] - 1
                remaining[nxt] = left
                if left == 0:
                    append(nxt)
    needed: dict[Node, bool] = {}
    for node in reversed(order):
        flag = False
        for nxt in node._edges[::2]:
            if nxt is not None and (nxt in captures or needed[nxt]):
                flag = True
                break
        if not flag and run_targets and node in captures:
            # backward(inputs=...) runs its targets as PyTorch does: a leaf's accumulator, and a
            # non-leaf's grad_fn with its hooks (what that one passes on goes no further).
            flag = True
        needed[node] = flag
    return needed


__all__ = [
    "GraphRoot",
    "GraphTask",
    "RunnableTask",
    "TaskStart",
    "compute_dependencies",
    "compute_exec_info",
]
