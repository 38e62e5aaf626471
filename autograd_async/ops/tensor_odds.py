"""Small PyTorch names with one job each: nonzero_static, narrow_copy, Tensor.get_device,
is_storage, and the top-level forms of resize_as_ and as_strided_."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .dual import xp_of
from .gather import nonzero
from .views import narrow


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """`nonzero` with exactly `size` rows: cut short, or filled with `fill_value` rows (a
    shape known before the values, as compiled programs need)."""
    require_tensor("nonzero_static", input)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(input)._data[:size]
    xp = xp_of(found)
    out = xp.full((size, found.shape[1]), fill_value, dtype=np.int64)
    out[: found.shape[0]] = found
    return Tensor._wrap(out, input.device)


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """`narrow`, as a new contiguous tensor rather than a view."""
    require_tensor("narrow_copy", input)
    return narrow(input, dim, start, length).clone()


def get_device(self: Tensor) -> int:
    """The index of the tensor's device: -1 on the cpu."""
    return -1 if self.device.type == "cpu" else int(self.device.index or 0)


def is_storage(obj: Any) -> bool:
    """Whether `obj` is a storage object; tensors here own their arrays, so never."""
    return False


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """`input.resize_as_(the_template)`."""
    require_tensor("resize_as_", input)
    return input.resize_as_(the_template, memory_format=memory_format)


def as_strided_(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """`input.as_strided_(size, stride, storage_offset)`."""
    require_tensor("as_strided_", input)
    return input.as_strided_(size, stride, storage_offset)


FUNCTIONS = {
    "nonzero_static": nonzero_static,
    "narrow_copy": narrow_copy,
    "is_storage": is_storage,
    "resize_as_": resize_as_,
    "as_strided_": as_strided_,
}
METHODS = {"get_device": get_device}
NOT_METHODS = ("is_storage", "resize_as_", "as_strided_")
