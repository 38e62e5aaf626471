"""Where a node enters the graph, and where a tensor's place in the graph is written.

Every node, whether an op (`Op.apply`), a custom Function (`Function.apply`), the root of a pass or
a leaf's accumulator, gets its fields and edges from `init_node` (in `graph`) and, in anomaly mode,
its forward traceback from `keep_forward_trace`. A tensor's `grad_fn` and `_output_nr` change
only through `set_history` (a new output of a node), `rebase_history` (a tensor changed in place
takes the in-place op's node) and `clear_history` (`detach_`), as in PyTorch's
`set_history`/`rebase_history` pair.
"""

from __future__ import annotations

import contextvars
import os
import traceback
from typing import TYPE_CHECKING

from ..devices import DeviceError
from ..grad_mode import grad_enabled
from .graph import NO_EDGE, Node, grad_accumulator, init_node

__all__ = [
    "NO_EDGE",
    "clear_history",
    "device_mismatch",
    "forward_name",
    "gradient_edge",
    "init_node",
    "keep_forward_trace",
    "rebase_history",
    "refresh_if_stale",
    "set_history",
]

if TYPE_CHECKING:
    from ..devices import Device
    from .tensor import Tensor


# ------------------------------------------------------------------------- nodes
def gradient_edge(tensor: Tensor) -> tuple[Node, int]:
    """The edge a gradient for `tensor` travels: its grad_fn's output, or its leaf accumulator."""
    fn = tensor._grad_fn
    if fn is not None:
        return fn, tensor._output_nr
    return grad_accumulator(tensor), 0


# Frames of these files are how an op got recorded, not where the user called it.
_CORE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(_CORE)
_RECORDING_FILES = (
    os.path.join(_CORE, "history.py"),
    os.path.join(_CORE, "tensor.py"),
    os.path.join(_CORE, "op.py"),
    os.path.join(_PACKAGE, "autograd", "function.py"),
    os.path.join(_PACKAGE, "ops") + os.sep,
)


# In anomaly mode, the node whose backward is running: a node recorded during it (a differentiable
# backward, a custom Function's backward) names it as its parent, as PyTorch's metadata does, so
# an error there can say which calculation induced it.
anomaly_parent: contextvars.ContextVar[Node | None] = contextvars.ContextVar(
    "autograd_async_anomaly_parent", default=None
)


def keep_forward_trace(node: Node) -> None:
    """Anomaly mode: keep the forward call's stack in the node's metadata, as PyTorch does.

    The frames that record the node (this module, the op machinery, `Function.apply`) are cut
    from the end, so the trace ends at the line that called the op.
    """
    frames = traceback.extract_stack()
    end = len(frames)
    while end > 1 and frames[end - 1].filename.startswith(_RECORDING_FILES):
        end -= 1
    node.metadata["traceback_"] = traceback.format_list(frames[:end])
    parent = anomaly_parent.get()
    if parent is not None:
        node.metadata["parent_"] = parent


def forward_name(node: Node) -> str:
    """The name PyTorch's messages give a node's op: `Mul` (MulBackward0), `Fill2` (FillBackward2).

    Nodes PyTorch writes by hand (`torch::autograd::CopySlices`) keep their names.
    """
    name = node.name()
    head, sep, tail = name.rpartition("Backward")
    if sep and tail.isdigit():
        return head if tail == "0" else head + tail
    return name


def device_mismatch(name: str, first: Device, second: Device) -> DeviceError:
    """The error for tensors of two devices given to one op or Function."""
    return DeviceError(
        f"{name}: expected all tensors to be on the same device, but found at least two devices, "
        f"{first} and {second}"
    )


# ----------------------------------------------------------------------- tensors
def set_history(tensor: Tensor, node: Node, output_nr: int) -> None:
    """Make `tensor` output `output_nr` of `node` (it then requires grad)."""
    tensor._grad_fn = node
    tensor._output_nr = output_nr
    tensor._rg = True


def rebase_history(tensor: Tensor, node: Node, output_nr: int = 0) -> None:
    """Give `tensor`, just changed in place, the history `node`.

    As PyTorch: `retain_grad` follows the tensor to its new history (its old node no longer
    holds the tensor's current value), while hooks registered with `register_hook` stay where
    they were.
    """
    old = tensor._grad_fn
    if old is not None and old is not node and old._hooks is not None:
        retained = old._hooks.retains_grad
        ref = retained.get(tensor._output_nr)
        if ref is not None and ref() is tensor:
            del retained[tensor._output_nr]
            set_history(tensor, node, output_nr)
            node._retain_grad_of(tensor)
            return
    set_history(tensor, node, output_nr)


def clear_history(tensor: Tensor) -> None:
    """Take `tensor` out of the graph (`detach_`): a leaf that does not require grad."""
    tensor._grad_fn = None
    tensor._output_nr = 0
    tensor._rg = False


def refresh_if_stale(view: Tensor) -> None:
    """A view whose base changed in place since its history was set gets a regenerated one.

    PyTorch does this when a view's grad_fn is read; here when the view is used (by an op, a
    Function, an in-place op or backward). Without it, a gradient through a view that overlaps
    a changed region would miss the change. The new history is a strided view of the base
    (`Tensor._regenerate_view`, installed by `ops.views`, which owns that op).
    """
    version = view._version_source._ver
    if view._view_version == version or not grad_enabled.get():
        return  # under no_grad it stays stale: a later use with grad mode on regenerates it
    view._view_version = version
    base = view._base
    if base._rg and base._data.flags.c_contiguous:
        view._regenerate_view()
