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
from typing import Any

import numpy as np

from .backends.sanitizer import enabled as sanitizer_enabled
from .backends.sanitizer import sanitizer
from .backends.sanitizer import watches as sanitizer_watches
from .backends.stream_context import override_for
from .devices import Device, array_module, check_entered
from .grad_mode import grad_enabled
from .graph import Node, init_node
from .history import anomaly_parent
from .ops.dual import can_sum_to, cast, sum_to, xp_of
from .ops.transfer import host_reads_outputs
from .streams import Stream, stream, streams_for
from .tensor import Tensor

_task_ids = itertools.count(1)

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


class GraphRoot(Node):
    """The root of a backward pass over several outputs: hands each root its starting gradient."""

    __slots__ = ("_grads",)
    runs_without_grad = True

    def __init__(self, edges: Sequence[tuple[Node, int]], grads: Sequence[Any], dev: Device):
        init_node(self, dev)  # PyTorch's GraphRoot takes a sequence number too
        self.next_functions = tuple(edges)
        self._grads = tuple(grads)
        self._out_meta = ()

    def backward(self, *_: Any) -> tuple:
        """The starting gradients."""
        return self._grads


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
        self.id = next(_task_ids)
        self.root = root
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.reentrant_depth = reentrant_depth
        self.anomaly = anomaly
        self.check_nan = check_nan
        self.dependencies = compute_dependencies(root)
        self.buffers: dict[Node, list] = {}
        self.exec_info: dict[Node, bool] | None = None
        self.captures: dict[Node, list[tuple[int, int]]] | None = None
        self.captured: list[Any] = []
        self._outstanding = 0
        self._lock = threading.Lock()
        self.error: BaseException | None = None
        self.finished = False
        self.on_finish = None
        self.context = None
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
        self.captured = [None] * len(targets)
        for index, (node, nr) in enumerate(targets):
            self.captures.setdefault(node, []).append((nr, index))
        # Before any deposit, `dependencies` still counts every edge: reuse it.
        self.exec_info = compute_exec_info(
            self.root, self.captures, run_targets, self.dependencies
        )

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

        The result pairs with `node.next_functions`; an empty tuple means nothing flows on.
        The common case (one gradient in, no hooks, captures, create_graph or anomaly mode) takes
        a short path: backward graphs are mostly chains of such nodes.
        """
        if node.device._entry is not None:  # CUDA's rule: this thread must have entered it
            check_entered(node.device, node.name())
        if (
            len(inputs) != 1
            or inputs[0] is None
            or node._hooks is not None
            or self.create_graph
            or self.anomaly
        ):
            return self._evaluate_general(node, inputs)
        captures = self.captures
        if captures is not None and (node in captures or not self.exec_info.get(node, False)):
            return self._evaluate_general(node, inputs)  # grad(): capture, or skip the node
        outputs = node.backward(inputs[0])
        if type(outputs) is not tuple:
            outputs = (outputs,)
        edges = node.next_functions
        if len(outputs) != len(edges):
            self.after_backward(node, inputs, outputs)  # raises the count error
        for (nxt, nr), g in zip(edges, outputs):
            if g is not None and nxt is not None:
                shape, dtype = nxt._out_meta[nr]
                got = g.dtype
                if g.shape != shape or (got is not dtype and got != dtype) or type(g) is Tensor:
                    outputs = validate_outputs(node, outputs, False)
                    break
        if not self.keep_graph:
            node.release_saved()
        return outputs

    def _evaluate_general(self, node: Node, inputs: list) -> tuple:
        inputs = self.before_backward(node, inputs)
        if inputs is None:
            return ()
        if not node.runs_without_grad and all(g is None for g in inputs):
            outputs = (None,) * len(node.next_functions)
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

    def before_backward(self, node: Node, inputs: list) -> list | None:
        """Pre-hooks and captures; None when the node must not run (not needed by `grad`).

        As in PyTorch: tensor hooks and retain_grad run first and captures see their result; a
        node that `grad` does not need stops there, so its own pre-hooks never run.
        """
        hooks = node._hooks
        captures = self.captures
        if captures is not None:
            found = captures.get(node)
            if found is None and not self.exec_info.get(node, False):
                return None  # PyTorch never queues such a node: none of its hooks run
        if hooks is not None and (hooks.tensor_pre or hooks.retains_grad):
            inputs = run_tensor_pre_hooks(node, hooks, inputs)
        if captures is not None:
            if found is not None:
                for nr, index in found:
                    held = self.captured[index]
                    g = inputs[nr]
                    self.captured[index] = g if held is None or g is None else held + g
            if not self.exec_info.get(node, False):
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
        if len(outputs) != len(node.next_functions):
            raise RuntimeError(
                f"function {node.name()} returned an incorrect number of gradients "
                f"(expected {len(node.next_functions)}, got {len(outputs)})"
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
        for nxt, _ in pop().next_functions:
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
        for nxt, _ in node.next_functions:
            if nxt is not None:
                left = remaining[nxt] - 1
                remaining[nxt] = left
                if left == 0:
                    append(nxt)
    needed: dict[Node, bool] = {}
    for node in reversed(order):
        flag = False
        for nxt, _ in node.next_functions:
            if nxt is not None and (nxt in captures or needed[nxt]):
                flag = True
                break
        if not flag and run_targets and node in captures:
            # backward(inputs=...) runs its targets as PyTorch does: a leaf's accumulator, and a
            # non-leaf's grad_fn with its hooks (what that one passes on goes no further).
            flag = True
        needed[node] = flag
    return needed


# ----------------------------------------------------------------------- checks
def validate_outputs(node: Node, outputs: tuple, create_graph: bool) -> tuple:
    """Reduce broadcast gradients to their input's shape and cast them to its dtype."""
    checked = None
    for i, ((nxt, nr), g) in enumerate(zip(node.next_functions, outputs, strict=True)):
        if g is None or nxt is None:
            continue
        if isinstance(g, Tensor) and g.device is not nxt.device:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - expected "
                f"device {nxt.device} but got {g.device}"
            )
        if create_graph and not isinstance(g, Tensor):
            g = Tensor._wrap(g, nxt.device)
        elif not create_graph and isinstance(g, Tensor):
            g = g._data
        if isinstance(g, np.generic):  # a NumPy scalar from a full reduction: keep arrays
            g = np.asarray(g)
        shape, dtype = nxt._out_meta[nr]
        fixed = g
        if g.shape != shape:
            if not can_sum_to(g.shape, shape):
                raise RuntimeError(
                    f"Function {node.name()} returned an invalid gradient at index {i} - got "
                    f"{list(g.shape)} but expected shape compatible with {list(shape)}"
                )
            fixed = sum_to(g, shape)
        if fixed.dtype != dtype:
            fixed = cast(fixed, dtype)
        if fixed is not outputs[i]:
            if checked is None:
                checked = list(outputs)
            checked[i] = fixed
    return outputs if checked is None else tuple(checked)


def call_node(node: Node, grad_outputs: tuple) -> Any:
    """`node(*grad_outputs)`: its backward on Tensors.

    As PyTorch's, the results are what the node returns: not yet summed to its inputs' shapes
    (the engine does that between nodes).
    """
    grad_outputs = _one_per_output(node, grad_outputs)
    grads = [g if g is None or isinstance(g, Tensor) else Tensor._wrap(g, node.device)
             for g in grad_outputs]
    if any(g is None for g in grads) and not all(g is None for g in grads):
        grads = materialize(node, grads, True)
    outputs = node.backward(*grads)
    if type(outputs) is not tuple:
        outputs = (outputs,)
    outputs = tuple(_to_tensor(_as_array(g), node) for g in outputs)
    return outputs[0] if len(outputs) == 1 else outputs


def _one_per_output(node: Node, grad_outputs: tuple) -> tuple:
    """Gradients for every output from those a caller gave, as PyTorch counts them: outputs
    of integer or bool dtype (a max's indices) take none."""
    meta = node._out_meta
    differentiable = [i for i, (_, dtype) in enumerate(meta) if dtype is None or dtype.kind in "fc"]
    if len(grad_outputs) != len(differentiable):
        raise TypeError(
            f"expected {len(differentiable)} arguments, got {len(grad_outputs)} instead"
        )
    if len(differentiable) == len(meta):
        return grad_outputs
    given = dict(zip(differentiable, grad_outputs, strict=True))
    return tuple(given.get(i) for i in range(len(meta)))


def _as_array(g: Any) -> Any:
    # A full reduction's gradient can be a NumPy scalar; a Tensor wraps arrays.
    return np.asarray(g) if isinstance(g, np.generic) else g


def materialize(node: Node, inputs: list, create_graph: bool) -> list:
    """Fill missing gradients of a multi-output node with zeros of the output's shape."""
    xp = array_module(node.device)
    filled = list(inputs)
    # PyTorch's `ctx._materialize_non_diff_grads = False`: outputs marked non-differentiable keep
    # None while the others are filled.
    keep_none = () if getattr(node, "_materialize_non_diff_grads", True) else (
        getattr(node, "_non_differentiable_outputs", ())
    )
    for i, g in enumerate(filled):
        if g is None and i not in keep_none:
            shape, dtype = node._out_meta[i]
            zeros = xp.zeros(shape, dtype)
            filled[i] = Tensor._wrap(zeros, node.device) if create_graph else zeros
    return filled


def _edge_device(node: Node, i: int) -> Device:
    """The device output gradient `i` of `node` lives on: its edge's node's (else node's)."""
    nxt = node.next_functions[i][0] if i < len(node.next_functions) else None
    return node.device if nxt is None else nxt.device


def check_nan(node: Node, outputs: tuple) -> None:
    """Anomaly mode: refuse NaN gradients, naming the node that made them."""
    checks_streams = sanitizer_enabled()
    for i, g in enumerate(outputs):
        if g is None:
            continue
        data = g._data if isinstance(g, Tensor) else g
        if data.dtype.kind not in "fc":
            continue
        if checks_streams:  # the host reads each gradient where it lives
            where = _edge_device(node, i)
            sanitizer.host_read(data, where, f"the anomaly check of {node.name()}")
        if bool(xp_of(data).isnan(data).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


# ------------------------------------------------------------------------ hooks
def _to_tensor(g: Any, node: Node) -> Any:
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._wrap(g, node.device)


def _like(result: Any, original: Any) -> Any:
    if result is None:
        return None
    if isinstance(original, Tensor) or not isinstance(result, Tensor):
        return result
    return result._data


def run_tensor_pre_hooks(node: Node, hooks: Any, inputs: list) -> list:
    """Tensor hooks (`register_hook`, a leaf's included), then retain_grad, in PyTorch's order.

    As PyTorch, a hook whose tensor got no gradient (a sibling output of split, say, carried
    it) is called with None, and may not replace it.
    """
    inputs = list(inputs)
    for nr, bucket in hooks.tensor_pre.items():
        for hook in list(bucket):
            result = hook(_to_tensor(inputs[nr], node))
            if result is not None:
                if inputs[nr] is None:
                    raise RuntimeError("can't replace a None gradient with a non-None value")
                check_hook_result(hook, result, inputs[nr], node)
                inputs[nr] = _like(result, inputs[nr])
    for nr, ref in hooks.retains_grad.items():
        tensor = ref()
        g = inputs[nr]
        if tensor is None or g is None:
            continue
        g = g if isinstance(g, Tensor) else Tensor._wrap(g.copy(), node.device)
        tensor.grad = g if tensor.grad is None else tensor.grad + g
    return inputs


def run_node_pre_hooks(node: Node, hooks: Any, inputs: list) -> list:
    """Node pre-hooks `hook(grad_outputs)`; a returned tuple replaces the node's inputs."""
    as_tensors = tuple(_to_tensor(g, node) for g in inputs)
    for hook in list(hooks.pre):
        result = hook(as_tensors)
        if result is not None:
            as_tensors = tuple(result)
    return [_like(t, g) for t, g in zip(as_tensors, inputs, strict=True)]


def check_hook_result(hook: Any, result: Any, original: Any, node: Node) -> None:
    """A tensor hook may replace a gradient, but not with one of another shape, dtype or device."""
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(result, Tensor):
        raise TypeError(
            f"hook '{name}' returned {type(result).__name__}; expected a Tensor or None"
        )
    if tuple(result.shape) != tuple(original.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if result.dtype != original.dtype:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {original.dtype} got {result.dtype})"
        )
    if result.device is not node.device:
        raise RuntimeError(
            f"hook '{name}' has changed the device of value (was {node.device} got "
            f"{result.device})"
        )


def run_post_hooks(node: Node, hooks: Any, outputs: tuple, inputs: list) -> tuple:
    """Node post-hooks `hook(grad_inputs, grad_outputs)`; a returned tuple replaces grad_inputs."""
    grad_inputs = tuple(  # each where it lives: the device of the edge it goes along
        g if g is None or isinstance(g, Tensor) else Tensor._wrap(g, _edge_device(node, i))
        for i, g in enumerate(outputs)
    )
    grad_outputs = tuple(_to_tensor(g, node) for g in inputs)
    for hook in list(hooks.post):
        result = hook(grad_inputs, grad_outputs)
        if result is not None:
            grad_inputs = tuple(result)
    return tuple(_like(t, g) for t, g in zip(grad_inputs, outputs, strict=True))


def add_on_stream(node: Node, held: Any, grad: Any, checks_streams: bool) -> Any:
    """`held + grad` on the stream `node` runs on, as PyTorch accumulates: a gradient may arrive
    while another stream is current (after a node on a side stream, or from another device)."""
    device = node.device
    backend = streams_for(device)
    target = node._stream
    if target is None:
        if backend.trivial and not checks_streams:
            return held + grad  # nothing orders streams here: the host order is the order
        target = backend.default_stream(device)
    current = override_for(device)
    if (current if current is not None else backend.default_stream(device)) is target:
        return _add(node, held, grad, checks_streams)
    with stream(Stream._of(device, target)):
        return _add(node, held, grad, checks_streams)


def _add(node: Node, held: Any, grad: Any, checks_streams: bool) -> Any:
    total = held + grad
    if checks_streams:
        check_sum_streams(node, held, grad, total)
    return total


def check_sum_streams(node: Node, held: Any, grad: Any, total: Any) -> None:
    """The sanitizer: gradients summed for `node` are read and written on the stream the sum
    was launched on, or on the host for a cpu node."""
    device = node.device
    if sanitizer_watches(device):
        stream = sanitizer.stream_for(device)  # where the sum is launched: this thread's stream
    elif device.type == "cpu":
        stream = sanitizer.world.host
    else:
        return
    what = f"summing gradients for {node.name()}"
    for array, write in ((held, False), (grad, False), (total, True)):
        data = getattr(array, "_data", array)  # a Tensor under create_graph
        sanitizer.access(data, device, stream, write, what)


def describe_node(node: Node) -> str:
    """`MulBackward0 (sequence_nr 12) on sim:0` for error notes."""
    return f"{node.name()} (sequence_nr {node._seq}) on {node.device}"


__all__ = ["GraphRoot", "GraphTask", "compute_dependencies", "compute_exec_info"]
