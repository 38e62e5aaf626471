"""`Tensor.new_*`: new tensors that take their dtype and device from an existing one."""

from __future__ import annotations

from typing import Any

from .. import creation
from ..core.tensor import Tensor


def new_zeros(
    self: Tensor,
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Zeros of `size`, with this tensor's dtype and device unless given."""
    return creation.zeros(
        *sizes,
        size=size,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def new_ones(
    self: Tensor,
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Ones of `size`, with this tensor's dtype and device unless given."""
    return creation.ones(
        *sizes,
        size=size,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def new_empty(
    self: Tensor,
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """An uninitialised tensor of `size`, with this tensor's dtype and device unless given."""
    return creation.empty(
        *sizes,
        size=size,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def new_full(
    self: Tensor,
    size: Any,
    fill_value: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """`fill_value` in a tensor of `size`, with this tensor's dtype and device unless given."""
    return creation.full(
        size,
        fill_value,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def new_tensor(
    self: Tensor,
    data: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A copy of `data`, with this tensor's dtype and device unless given."""
    return creation.tensor(
        data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad
    )


def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """PyTorch's legacy constructor: `x.new(2, 3)` sizes, `x.new([1, 2])` data, `x.new(t)` alias.

    Sizes are given as ints or one tuple of ints (what `x.shape` and `x.size()` are here, where
    PyTorch has `Size`); a list or array is data. The result has this tensor's dtype, and never
    requires grad.
    """
    where = device or self.device
    if not args:
        return creation.empty(0, dtype=self.dtype, device=where)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if first.dtype != self.dtype:
            raise TypeError(
                f"new(): expected a tensor of dtype {self.dtype}, got one of dtype {first.dtype}"
            )
        return first.detach()
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return creation.empty(*args, dtype=self.dtype, device=where)
    if len(args) == 1 and isinstance(first, tuple) and all(isinstance(a, int) for a in first):
        return creation.empty(*first, dtype=self.dtype, device=where)
    if len(args) > 1:
        raise TypeError(
            "new() received an invalid combination of arguments: sizes must all be ints, got "
            f"({', '.join(type(a).__name__ for a in args)})"
        )
    if isinstance(first, str | bytes):
        raise TypeError(f"new(): invalid data type '{type(first).__name__}'")
    if not hasattr(first, "__len__") and not hasattr(first, "__array__"):
        raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")
    return creation.tensor(first, dtype=self.dtype, device=where)


METHODS = {
    "new": new,
    "new_zeros": new_zeros,
    "new_ones": new_ones,
    "new_empty": new_empty,
    "new_full": new_full,
    "new_tensor": new_tensor,
}
