"""Python callables over a tensor's elements, in place: `apply_`, `map_`, `map2_`.

As in PyTorch they run element by element on cpu tensors outside the graph: a tensor that
requires grad is refused, and the version counter is left as it was (PyTorch's kernels write
around it).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Complex, Real
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from .conversion import type_name
from .shape import expand


def _refuse(name: str, *tensors: Tensor) -> None:
    for t in tensors:
        if t.requires_grad:
            raise RuntimeError(
                f"Can't call {name}() on Variable that requires grad. Use "
                f"var.detach().{name}() instead."
            )


def _require_cpu(name: str, t: Tensor) -> None:
    if t.device.type != "cpu":
        raise RuntimeError(f"{name} is only implemented on CPU tensors")


def _converter(dtype: np.dtype) -> Callable[[Any], Any]:
    """What a callable's result becomes in an element of `dtype`, PyTorch's TypeError first."""
    kind = dtype.kind
    wanted, label = (Complex, "complex") if kind == "c" else (Real, "real")

    def convert(value: Any) -> Any:
        if not isinstance(value, wanted) or isinstance(value, (str, bytes)):
            raise TypeError(f"must be {label} number, not {type(value).__name__}")
        if kind == "b":
            return bool(value)
        if kind in "iu":
            return int(value)  # type: ignore[call-overload]  # Python and NumPy Reals have __int__
        return value

    return convert


def _operand(name: str, self: Tensor, other: Any) -> np.ndarray:
    """`other`'s values broadcast to `self`'s shape, with PyTorch's type and size errors."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'tensor' must be Tensor, not {type(other).__name__}")
    _require_cpu(name, other)
    if other.dtype != self.dtype:
        raise TypeError(f"{name}: expected {type_name(self)} for 'other' (got {type_name(other)})")
    return expand(other, self.shape)._data  # PyTorch's error for a shape that does not fit


def _write_each(self: Tensor, fn: Callable, *others: np.ndarray) -> Tensor:
    data = self._data
    convert = _converter(data.dtype)
    for index in np.ndindex(data.shape):
        args = (data[index].item(), *(o[index].item() for o in others))
        data[index] = convert(fn(*args))
    return self


def apply_(self: Tensor, callable: Callable) -> Tensor:  # noqa: A002 - PyTorch's name
    """Replace each element `x` with `callable(x)` (cpu tensors only)."""
    _refuse("apply_", self)
    _require_cpu("apply_", self)
    return _write_each(self, callable)


def map_(self: Tensor, tensor: Tensor, callable: Callable) -> Tensor:  # noqa: A002
    """Replace each element `x` with `callable(x, y)`, `y` from `tensor` broadcast to this
    tensor's shape (cpu tensors only)."""
    _refuse("map_", self, *(t for t in (tensor,) if isinstance(t, Tensor)))
    _require_cpu("map_", self)
    return _write_each(self, callable, _operand("map_", self, tensor))


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable) -> Tensor:  # noqa: A002
    """Replace each element `a` with `callable(a, b, c)`, `b` and `c` from `x` and `y`
    broadcast to this tensor's shape (cpu tensors only)."""
    _refuse("map2_", self, *(t for t in (x, y) if isinstance(t, Tensor)))
    _require_cpu("map2_", self)
    return _write_each(self, callable, _operand("map2_", self, x), _operand("map2_", self, y))


METHODS = {"apply_": apply_, "map_": map_, "map2_": map2_}
