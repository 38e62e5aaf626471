"""How an op node saves for backward while saved-tensor hooks are active (see `saved_hooks`).

`Op` calls these at its few saving and reading points: the node then keeps only what the pack
hook returned, for its saved inputs, its saved output and the arrays of its `saved_slots`, and
reads each back through the unpack hook. As in PyTorch, nothing saved this way is checked against
in-place changes: the graph does not hold the tensors.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ..devices import is_device_array
from .saved_hooks import PackedTensor, pack, unpack, unpack_data
from .tensor import INFERENCE_SAVED_MESSAGE, InferenceTensor, Tensor

if TYPE_CHECKING:
    from .op import Op

# `_saved_data` of a node whose saved tensors went through saved-tensor hooks.
PACKED = ("packed",)


def save_packed(node: Op, inputs: tuple, indices: tuple[int, ...]) -> None:
    """Save the node's inputs through the active hooks (its `saved_slots` follow, `pack_slots`)."""
    plans = node._save_plans
    keep = (
        (True,) * len(indices)
        if plans is None
        else (plans.get(node.needs_input_grad) or node._save_plan())
    )
    if any(type(inputs[i]) is InferenceTensor for i in indices):
        raise RuntimeError(INFERENCE_SAVED_MESSAGE)
    node._saved = tuple(
        [
            pack(inputs[i]) if k and isinstance(inputs[i], Tensor) else (inputs[i] if k else None)
            for i, k in zip(indices, keep)
        ]
    )
    node._saved_data = PACKED
    node._checks = ()


def pack_slots(node: Op) -> None:
    """Save the arrays the op keeps itself (a dropout mask) through the hooks, after forward."""
    dev = node.device
    for name in node.saved_slots:
        value = getattr(node, name, None)
        if isinstance(value, np.ndarray) or is_device_array(value):
            setattr(node, name, pack(Tensor._wrap(value, dev)))


def pack_output(node: Op, out: Tensor) -> None:
    """Save the node's output 0 through the active hooks."""
    node._out_ref = weakref.ref(out)
    packed = pack(out)
    packed.grad_fn = None  # it is `node`: `unpacked` links it back, without a reference cycle
    node._saved_out = packed


def unpacked(node: Op, like: Any) -> tuple:
    """What `Op.saved` returns for a packed node: arrays, or Tensors when `like` is a Tensor."""
    if not isinstance(like, Tensor):
        values = [unpack_data(p) for p in node._saved or ()]  # None only once released
        if node.saves_output:
            values.append(unpack_data(node._saved_out))
        return tuple(values)
    values = [unpack(p) if type(p) is PackedTensor else p for p in node._saved or ()]
    if node.saves_output:
        values.append(Tensor._wrap(unpack_data(node._saved_out), node.device, node, 0))
    return tuple(values)


def unpack_slots(node: Op) -> None:
    """Put the arrays of `saved_slots` back from their unpack hooks before backward reads them."""
    for name in node.saved_slots:
        value = getattr(node, name, None)
        if type(value) is PackedTensor:
            setattr(node, name, unpack_data(value))
