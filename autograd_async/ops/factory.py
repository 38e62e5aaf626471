"""`Tensor.new_*`: new tensors that take their dtype and device from an existing one."""

from __future__ import annotations

from typing import Any

from .. import creation
from ..tensor import Tensor


def new_zeros(
    self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Zeros of `size`, with this tensor's dtype and device unless given."""
    return creation.zeros(*sizes, size=size, dtype=dtype or self.dtype,
                          device=device or self.device, requires_grad=requires_grad)


def new_ones(
    self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Ones of `size`, with this tensor's dtype and device unless given."""
    return creation.ones(*sizes, size=size, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


def new_empty(
    self: Tensor, *sizes: Any, size: Any = None, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """An uninitialised tensor of `size`, with this tensor's dtype and device unless given."""
    return creation.empty(*sizes, size=size, dtype=dtype or self.dtype,
                          device=device or self.device, requires_grad=requires_grad)


def new_full(
    self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """`fill_value` in a tensor of `size`, with this tensor's dtype and device unless given."""
    return creation.full(size, fill_value, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


def new_tensor(
    self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A copy of `data`, with this tensor's dtype and device unless given."""
    return creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad)


METHODS = {
    "new_zeros": new_zeros,
    "new_ones": new_ones,
    "new_empty": new_empty,
    "new_full": new_full,
    "new_tensor": new_tensor,
}
