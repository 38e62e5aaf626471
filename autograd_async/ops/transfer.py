"""Moving a tensor to another device or dtype: the cross-device edge of a graph.

`ToCopyBackward0` lives on the destination device (where its gradient arrives) and sends the
gradient back to the source device in its backward, so the engine hands the result to the source's
worker.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ..backends.stream_context import override_for
from ..core.op import Op
from ..core.tensor import Tensor, as_dtype
from ..devices import Device, check_available
from ..layouts import is_laid_out_as, preserve_format, require_memory_format
from ..streams import copy_between

#: True while the graph task reads a node's output gradients on the host as soon as its backward
#: returns (post-hooks, anomaly mode's NaN check): a copy to the host must then be complete.
host_reads_outputs: ContextVar[bool] = ContextVar(
    "autograd_async_host_reads_outputs", default=False
)


class ToCopyBackward0(Op):
    __slots__ = ("_src", "_src_dtype")
    op_name = "to"

    def forward(self, a: Any, device: Device, dtype: Any) -> Any:
        self._src = self.device
        self._src_dtype = a.dtype
        out = a
        if device is not self.device:
            out = copy_between(a, self.device, device)
            self.device = device
            self._stream = override_for(device)  # the node runs where its output lives
        if dtype is not None and out.dtype != dtype:
            out = out.astype(dtype)
        return out

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return g.to(self._src, dtype=self._src_dtype)
        if g.dtype != self._src_dtype:
            if g.dtype.kind == "c" and self._src_dtype.kind != "c":
                g = g.real  # a real input's gradient is the real part, as PyTorch's
            g = g.astype(self._src_dtype)  # on this device: the host reads nothing of the copy
        if self.device is not self._src:
            # Non-blocking to the host: the engine delivers it once its copy has completed;
            # blocking when the task reads it here first (post-hooks, anomaly checks).
            blocking = host_reads_outputs.get()
            g = copy_between(g, self.device, self._src, non_blocking=not blocking)
        return g


def to(
    tensor: Any,
    *args: Any,
    device: Any = None,
    dtype: Any = None,
    non_blocking: bool = False,
    copy: bool = False,
    memory_format: Any = None,
) -> Any:
    """Copy to a device and/or dtype: `t.to('sim:0')`, `t.to(float64)`, `t.to('cpu', float32)`,
    `t.to(other)`; then `non_blocking` and `copy`, as PyTorch's three overloads take them."""
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):
        other = rest.pop(0)
        device, dtype = other.device, other.dtype
    else:
        if rest and isinstance(rest[0], (str, Device, int)) and not isinstance(rest[0], bool):
            device = rest.pop(0)
        if rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
    if len(rest) > 2 or not all(isinstance(flag, bool) for flag in rest):
        raise TypeError(
            f"to() received an invalid combination of arguments - got {len(args)} positional "
            "arguments, but expected (device=None, dtype=None, non_blocking=False, copy=False), "
            "(dtype, non_blocking=False, copy=False) or (tensor, non_blocking=False, copy=False)"
        )
    if len(rest) == 2:  # (non_blocking, copy); a copy is always ordered on the streams here
        copy = rest[1]
    if isinstance(device, int):
        device = f"cuda:{device}"
    fmt = require_memory_format(memory_format, "to") if memory_format is not None else None
    dst = tensor.device if device is None else Device(device)
    check_available(dst)
    dtype = as_dtype(dtype)
    if dst is tensor.device and (dtype is None or dtype == tensor.dtype) and not copy:
        moved = tensor
    else:
        moved = ToCopyBackward0.apply(tensor, device=dst, dtype=dtype)
    if fmt is not None and fmt is not preserve_format and not is_laid_out_as(moved._data, fmt):
        moved = moved.contiguous(memory_format=fmt)
    return moved
