"""`backward`, `grad` and their awaitable forms: turn user arguments into a graph task and run it."""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ..core.graph import GraphRoot, Node, claim
from ..core.history import gradient_edge, refresh_if_stale
from ..core.tensor import Tensor
from ..devices import CPU, array_module, launching
from ..engine import get_engine
from ..grad_mode import anomaly_check_nan, anomaly_enabled
from ..graph_task import GraphTask, RunnableTask, TaskStart, caller_context
from ..ops.shape import stack


def _as_tuple(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (Tensor, str)) or hasattr(value, "__array__"):
        return (value,)  # one argument, checked (and refused if not a Tensor) by the caller
    if isinstance(value, tuple):
        return value
    return tuple(value) if hasattr(value, "__iter__") else (value,)


def _root_gradients(outputs: tuple, grad_outputs: tuple, create_graph: bool) -> list:
    if grad_outputs and len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    grads = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"outputs must be Tensors, got {type(out).__name__} at index {i}")
        if not out._rg:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        given = grad_outputs[i] if grad_outputs else None
        if given is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype.kind == "c":  # as PyTorch: d(complex)/dz has no implicit seed
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype!r}"
                )
            # Filled, not `out * 0 + 1`: an inf or nan output still starts with gradient 1. The
            # array's own methods, not its module's `ones_like`: no module lookup on every pass.
            with launching(out.device, "backward"):
                g = out._data.copy()
                g.fill(1)
        elif isinstance(given, Tensor):
            if given.device is not out.device:
                raise RuntimeError(
                    f"gradient for output {i} is on {given.device} but the output is on "
                    f"{out.device}"
                )
            if given.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {given.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
                )
            if create_graph:
                g = given
            else:
                g = given._data
                claim(g)  # the caller holds it: a leaf that receives it unchanged stores a copy
        else:
            raise TypeError(f"gradients must be Tensors or None, got {type(given).__name__}")
        if create_graph and not isinstance(g, Tensor):
            g = Tensor._wrap(g, out.device)
        grads.append(g)
    return grads


class PreparedTask(RunnableTask):
    """A graph task plus how to start it and what to give back when it finishes."""

    __slots__ = ("inputs", "mode", "allow_unused")

    def __init__(
        self,
        task: GraphTask,
        starts: list[TaskStart],
        inputs: tuple,
        mode: str,
        allow_unused: bool,
    ) -> None:
        super().__init__(task, starts)
        self.inputs = inputs
        self.mode = mode
        self.allow_unused = allow_unused

    def result(self) -> Any:
        """After the task finished: gradients for `grad`, None for `backward`."""
        task = self.task
        if self.mode == "grad":
            out = []
            for i, (t, g) in enumerate(zip(self.inputs, task.captured, strict=True)):
                if g is None and not self.allow_unused:
                    raise RuntimeError(
                        f"The differentiated Tensor at index {i} appears to not have been used in "
                        "the graph. Set allow_unused=True if this is the desired behavior."
                    )
                out.append(_wrap_grad(g, t))
            return tuple(out)
        return None  # backward(inputs=...): non-leaf inputs got theirs through retain_grad


def _wrap_grad(g: Any, like: Tensor) -> Tensor | None:
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._wrap(g, like.device)


def prepare(
    outputs: Any,
    grad_outputs: Any,
    retain_graph: bool | None,
    create_graph: bool,
    inputs: Any,
    mode: str,
    allow_unused: bool = False,
    reentrant_depth: int = 0,
) -> PreparedTask:
    """Validate arguments and build the graph task of a backward/grad call."""
    outs = _as_tuple(outputs)
    if not outs:
        raise RuntimeError(f"{mode}: expected at least one output tensor")
    grad_outs = _as_tuple(grad_outputs)
    if grad_outs and all(g is None for g in grad_outs):
        grad_outs = ()
    ins = _as_tuple(inputs)
    if not ins and (mode == "grad" or inputs is not None):
        raise RuntimeError(f"`inputs` argument to `{mode}()` cannot be empty.")
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs must be Tensors, got {type(t).__name__} at index {i}")
        if not t._rg:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}) does not require grad"
            )
    for t in (*outs, *ins):
        if isinstance(t, Tensor) and t._base is not None:
            refresh_if_stale(t)  # a view whose base changed in place since: regenerate
    keep_graph = create_graph if retain_graph is None else bool(retain_graph)
    grads = _root_gradients(outs, grad_outs, create_graph)
    edges = [gradient_edge(t) for t in outs]
    if len(edges) == 1:
        root: Node = edges[0][0]
        starts = [TaskStart(edges[0][0], edges[0][1], grads[0])]
    else:
        root = GraphRoot(edges, grads, outs[0].device if outs[0].device.is_accelerator else CPU)
        starts = [TaskStart(root, 0, None)]
    task = GraphTask(
        root,
        keep_graph=keep_graph,
        create_graph=create_graph,
        reentrant_depth=reentrant_depth,
        anomaly=anomaly_enabled.get(),
        check_nan=anomaly_check_nan.get(),
    )
    task.dependencies[root] = task.dependencies.get(root, 0) + 1
    task.context = caller_context()
    if ins:
        if mode == "backward":
            # As PyTorch: a non-leaf input retains its grad from now on, and that hook (which runs
            # before captures) is what accumulates its .grad.
            for t in ins:
                if t.grad_fn is not None:
                    t.retain_grad()
        task.capture([gradient_edge(t) for t in ins], run_targets=(mode == "backward"))
    return PreparedTask(task, starts, ins, mode, allow_unused)


def _launch(
    mode: str,
    outputs: Any,
    grad_outputs: Any,
    retain_graph: bool | None,
    create_graph: bool,
    inputs: Any,
    allow_unused: bool = False,
) -> tuple[Any, PreparedTask]:
    """The engine and the prepared task of one call.

    The root device's worker is woken before the task is prepared, so that its wake-up (tens of
    microseconds) overlaps the preparation instead of following it.
    """
    engine = get_engine()
    outs = _as_tuple(outputs)
    if outs and isinstance(outs[0], Tensor):
        engine.prewake(outs[0].device)
    prepared = prepare(
        outputs, grad_outputs, retain_graph, create_graph, inputs, mode, allow_unused
    )
    return engine, prepared


@functools.cache  # once per process, as PyTorch warns
def warn_create_graph_cycle() -> None:
    """PyTorch's warning for `backward(create_graph=True)`: .grad and its graph form a cycle."""
    warnings.warn(
        "Using backward() with create_graph=True will create a reference cycle between the "
        "parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this. If you have to use this function, "
        "make sure to reset the .grad fields of your parameters to None after use to break the "
        "cycle and avoid the leak.",
        UserWarning,
        stacklevel=3,
    )


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate gradients of `tensors` into leaves' `.grad`, blocking until done."""
    if create_graph:
        warn_create_graph_cycle()
    engine, prepared = _launch(
        "backward", tensors, grad_tensors, retain_graph, create_graph, inputs
    )
    engine.run(prepared, kind="backward")
    prepared.result()


async def backward_async(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Like `backward`, awaited without blocking the caller's event loop."""
    if create_graph:
        warn_create_graph_cycle()
    engine, prepared = _launch(
        "backward", tensors, grad_tensors, retain_graph, create_graph, inputs
    )
    await engine.run_async(prepared, kind="backward_async")
    prepared.result()


def _unused_policy(allow_unused: bool | None, materialize_grads: bool) -> bool:
    """`allow_unused` defaults to `materialize_grads`, and may not contradict it (PyTorch's)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    return materialize_grads if allow_unused is None else bool(allow_unused)


def _materialized(result: tuple, inputs: Any, create_graph: bool) -> tuple:
    """Zeros (requiring grad under create_graph) for the inputs that got no gradient."""
    out = []
    for g, t in zip(result, _as_tuple(inputs), strict=True):
        if g is None:
            with launching(t.device, "grad"):
                g = Tensor._wrap(array_module(t.device).zeros_like(t._data), t.device)
            if create_graph:
                g.requires_grad_(True)
        out.append(g)
    return tuple(out)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Gradients of `outputs` with respect to `inputs`, running only the graph that leads there.

    With `materialize_grads=True`, unused inputs get zeros instead of None. With
    `is_grads_batched=True`, the first dimension of each of `grad_outputs` is a batch: each row
    is backpropagated (through the same graph) and the results are stacked along a first dim.
    """
    _check_only_inputs(only_inputs)
    if is_grads_batched:
        return _batched(
            grad,
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    allow = _unused_policy(allow_unused, materialize_grads)
    engine, prepared = _launch(
        "grad", outputs, grad_outputs, retain_graph, create_graph, inputs, allow
    )
    engine.run(prepared, kind="grad")
    result = prepared.result()
    return _materialized(result, inputs, create_graph) if materialize_grads else result


async def grad_async(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Like `grad`, awaited without blocking the caller's event loop."""
    _check_only_inputs(only_inputs)
    if is_grads_batched:
        rows = _batch_rows(grad_outputs)
        results = []
        for k, row in enumerate(rows):
            keep = True if k < len(rows) - 1 else retain_graph
            results.append(
                await grad_async(
                    outputs,
                    inputs,
                    row,
                    keep,
                    create_graph,
                    allow_unused=allow_unused,
                    materialize_grads=materialize_grads,
                )
            )
        return _stack_rows(results)
    allow = _unused_policy(allow_unused, materialize_grads)
    engine, prepared = _launch(
        "grad", outputs, grad_outputs, retain_graph, create_graph, inputs, allow
    )
    await engine.run_async(prepared, kind="grad_async")
    result = prepared.result()
    return _materialized(result, inputs, create_graph) if materialize_grads else result


def _batch_rows(grad_outputs: Any) -> list[tuple]:
    """The rows of batched `grad_outputs`: one tuple of per-output gradients per batch entry."""
    grads = _as_tuple(grad_outputs)
    if not grads or any(not isinstance(g, Tensor) for g in grads):
        raise RuntimeError("grad(): is_grads_batched=True needs a Tensor grad_output per output")
    if any(g.ndim == 0 for g in grads) or len({g.shape[0] for g in grads}) != 1:
        raise RuntimeError(
            "grad(): with is_grads_batched=True every grad_output needs the same size in its "
            f"first (batch) dimension, got shapes {[tuple(g.shape) for g in grads]}"
        )
    size = grads[0].shape[0]
    return [tuple(g[k] for g in grads) for k in range(size)]


def _stack_rows(results: list[tuple]) -> tuple:
    """Per-row gradients stacked along a new first dimension (None where a row had none)."""
    stacked = []
    for column in zip(*results, strict=True):
        stacked.append(None if any(g is None for g in column) else stack(column))
    return tuple(stacked)


def _batched(
    run: Any,
    outputs: Any,
    inputs: Any,
    grad_outputs: Any,
    retain_graph: Any,
    create_graph: bool,
    allow_unused: Any,
    materialize_grads: bool,
) -> tuple:
    """`grad(..., is_grads_batched=True)`: one pass per batch row over the retained graph."""
    rows = _batch_rows(grad_outputs)
    results = []
    for k, row in enumerate(rows):
        keep = True if k < len(rows) - 1 else retain_graph
        results.append(
            run(
                outputs,
                inputs,
                row,
                keep,
                create_graph,
                allow_unused=allow_unused,
                materialize_grads=materialize_grads,
            )
        )
    return _stack_rows(results)


def _check_only_inputs(only_inputs: bool) -> None:
    """PyTorch's deprecated `only_inputs`: accepted in its place, ignored with its warning."""
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=3,
        )
