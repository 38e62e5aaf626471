# cython: freethreading_compatible=True
"""How one node of a backward pass is evaluated, apart from the pass's bookkeeping: the checks on
what its backward returned (count, shape, dtype, device), its hooks, the zeros that stand for
missing gradients, anomaly mode's NaN check and the sum of gradients meeting at a node.

`GraphTask.evaluate` calls these on the node's device thread; `Node.__call__` (a node run outside
a backward pass, as PyTorch allows) is installed from here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backends.sanitizer import enabled as sanitizer_enabled
from .backends.sanitizer import sanitizer
from .backends.sanitizer import watches as sanitizer_watches
from .backends.stream_context import override_for
from .core.arrays import can_sum_to, cast, sum_to, xp_of
from .core.graph import Node
from .core.tensor import Tensor
from .devices import Device, array_module
from .streams import Stream, stream, streams_for


# ----------------------------------------------------------------------- checks
def validate_outputs(node: Node, outputs: tuple, create_graph: bool) -> tuple:
    """Reduce broadcast gradients to their input's shape and cast them to its dtype."""
    checked = None
    pairs = iter(node._edges)  # one gradient per edge: the callers have checked the count
    for i, (nxt, nr, g) in enumerate(zip(pairs, pairs, outputs)):
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
    grads = [
        g if g is None or isinstance(g, Tensor) else Tensor._wrap(g, node.device)
        for g in grad_outputs
    ]
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
    keep_none = (
        ()
        if getattr(node, "_materialize_non_diff_grads", True)
        else (getattr(node, "_non_differentiable_outputs", ()))
    )
    for i, g in enumerate(filled):
        if g is None and i not in keep_none:
            shape, dtype = node._out_meta[i]
            zeros = xp.zeros(shape, dtype)
            filled[i] = Tensor._wrap(zeros, node.device) if create_graph else zeros
    return filled


def _edge_device(node: Node, i: int) -> Device:
    """The device output gradient `i` of `node` lives on: its edge's node's (else node's)."""
    edges = node._edges
    nxt = edges[2 * i] if 2 * i < len(edges) else None
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
            f"hook '{name}' has changed the device of value (was {node.device} got {result.device})"
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
        # Where the sum is launched: this thread's stream of the device, as `stream_for` says.
        stream = sanitizer.world.launch_stream(device)
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


def _call(self: Node, *grad_outputs: Any) -> Any:
    """Run the node's backward on `grad_outputs` outside a backward pass, as PyTorch does.

    Gradients come back as Tensors, one per edge (a single one unwrapped); with grad mode on,
    they are recorded like any op.
    """
    return call_node(self, grad_outputs)


Node.__call__ = _call  # type: ignore[method-assign]  # installed from above the graph, as declared
