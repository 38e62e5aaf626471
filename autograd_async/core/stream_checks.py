"""What an op reads and writes, told to the stream sanitizer (CUDA-faithful sim mode only)."""

from __future__ import annotations

from typing import Any

from ..backends.sanitizer import sanitizer, watches
from .tensor import Tensor


def check_op_streams(op: str, inputs: tuple, result: Any, is_view: bool) -> None:
    """Inputs are read, outputs written (a view writes nothing) on their device's stream."""
    for x in inputs:
        if isinstance(x, Tensor) and watches(x.device):
            sanitizer.read(x._data, x.device, op)
    if is_view:
        return
    for t in result if type(result) is tuple else (result,):
        if isinstance(t, Tensor) and watches(t.device):
            sanitizer.write(t._data, t.device, op)
