"""Tensors to and from the wire: host arrays for the frame, argument and output specs.

A tensor travels as a NumPy array (copied off a CUDA device, shared otherwise) plus, in the
kwargs, whether it requires grad. Its device does not travel: each side places what it
receives on a device of its own choosing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..creation import as_tensor
from ..devices import CPU, Device

__all__ = ["SIMPLE_TYPES", "check_simple", "host_array", "output_device", "pack_args", "to_device"]

SIMPLE_TYPES = (type(None), bool, int, float, str)


def host_array(t: Tensor | np.ndarray) -> np.ndarray:
    """The tensor's data as a NumPy array (no copy for cpu and sim tensors)."""
    if isinstance(t, np.ndarray):
        return t
    return np.asarray(t.__array__())


def to_device(array: np.ndarray, device: Device, requires_grad: bool = False) -> Tensor:
    """A leaf tensor on `device` around a received array (shared unless the device is cuda)."""
    t = as_tensor(array, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def check_simple(value: Any, where: str, depth: int = 0) -> None:
    """Raise TypeError unless `value` is a simple value (None, bool, int, float, str, lists and
    str-keyed dicts of them) that can travel in a header."""
    if depth > 16:
        raise TypeError(f"{where} is nested too deeply to send")
    if isinstance(value, SIMPLE_TYPES):
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_simple(item, f"{where}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has a non-str key {key!r}; only str keys can be sent")
            check_simple(item, f"{where}.{key}", depth + 1)
        return
    raise TypeError(
        f"{where} is a {type(value).__name__}, which cannot be sent to a worker: pass tensors "
        "positionally and other arguments as None, bool, int, float, str, or lists/dicts of them"
    )


def pack_args(args: Sequence[Any]) -> tuple[list[dict], list[np.ndarray], list[bool], list]:
    """Specs, arrays and requires-grad flags of positional arguments; also the tensors sent."""
    specs: list[dict] = []
    arrays: list[np.ndarray] = []
    flags: list[bool] = []
    tensors: list[Tensor | None] = []
    for i, arg in enumerate(args):
        if isinstance(arg, Tensor | np.ndarray):
            specs.append({"tensor": len(arrays)})
            arrays.append(host_array(arg))
            if isinstance(arg, Tensor):
                flags.append(bool(arg.requires_grad))
                tensors.append(arg)
            else:
                flags.append(False)
                tensors.append(None)
        else:
            check_simple(arg, f"argument {i}")
            specs.append({"value": arg})
    return specs, arrays, flags, tensors


def output_device(tensors: Sequence[Tensor | None]) -> Device:
    """Where received outputs go: the device of the first tensor argument, else cpu."""
    for t in tensors:
        if t is not None:
            return t.device
    return CPU
