"""Binary and ternary pointwise math: atan2 hypot remainder fmod lerp xlogy.

Operands broadcast and promote as in PyTorch (`promotion.promote`); Python scalars are inputs
without an edge. Gradients come back in the broadcast shape and the engine sums them to each
input's shape.
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from .comparison import _binary_method
from .dual import as_array, data_of, log, mul_const, quiet, where, xp_of
from .promotion import as_float, promote, result_type, scalar


def _float_pair(a: Any, b: Any) -> tuple[Any, Any]:
    """Promoted operands, as float32 when both hold integers (ops with float results)."""
    a, b = promote(a, b)
    if hasattr(a, "dtype"):
        if a.dtype.kind in "biu":
            a = as_float(a)
            b = b.astype(a.dtype) if hasattr(b, "dtype") else b
    elif b.dtype.kind in "biu":
        b = as_float(b)
    return a, b


class Atan2Backward0(Op):
    __slots__ = ()
    saved_inputs = (0, 1)

    def forward(self, a: Any, b: Any) -> Any:
        a, b = _float_pair(a, b)
        return as_array(xp_of(a if hasattr(a, "dtype") else b).arctan2(a, b))

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        with quiet():  # atan2(0, 0): 0 / 0, nan as in PyTorch
            scale = g / (a * a + b * b)
            return (scale * b if need[0] else None), (-scale * a if need[1] else None)


class HypotBackward0(Op):
    __slots__ = ()
    saved_inputs = (0, 1)
    saves_output = True

    def forward(self, a: Any, b: Any) -> Any:
        a, b = _float_pair(a, b)
        return as_array(xp_of(a if hasattr(a, "dtype") else b).hypot(a, b))

    def backward(self, g: Any) -> tuple:
        a, b, out = self.saved(g)
        need = self.needs_input_grad
        with quiet():
            scale = g / out
            return (scale * a if need[0] else None), (scale * b if need[1] else None)


class _DivisionRemainder(Op):
    """a - b * q(a / b): d/da is 1, d/db is -q(a / b) (floor for remainder, trunc for fmod)."""

    __slots__ = ()
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (1,)}
    _rounding = "floor"

    def forward(self, a: Any, b: Any) -> Any:
        a, b = promote(a, b)
        xp = xp_of(a if hasattr(a, "dtype") else b)
        fn = xp.remainder if self._rounding == "floor" else xp.fmod
        with quiet():  # x % 0 is nan for floats
            out = fn(a, b)
        if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
            out = out.astype(result_type(a, b))
        return as_array(out)

    def backward(self, g: Any) -> tuple:
        need = self.needs_input_grad
        gb = None
        if need[1]:
            a, b = (data_of(v) for v in self.saved(g))
            xp = xp_of(b if hasattr(b, "dtype") else a)
            with quiet():
                q = getattr(xp, self._rounding)(a / b)
            gb = mul_const(g, -q)
        return (g if need[0] else None), gb


class RemainderBackward0(_DivisionRemainder):
    __slots__ = ()


class FmodBackward0(_DivisionRemainder):
    __slots__ = ()
    _rounding = "trunc"


class LerpBackward0(Op):
    """start + weight * (end - start); the weight is an input too (a scalar takes no edge)."""

    __slots__ = ()
    saved_inputs = (0, 1, 2)
    saved_for = {0: (2,), 1: (2,), 2: (0, 1)}

    def forward(self, start: Any, end: Any, weight: Any) -> Any:
        start, end = promote(start, end)
        return as_array(start + weight * (end - start))

    def backward(self, g: Any) -> tuple:
        start, end, weight = self.saved(g)
        need = self.needs_input_grad
        g_start = g * (1 - weight) if need[0] else None
        g_end = g * weight if need[1] else None
        g_weight = g * (end - start) if need[2] else None
        return g_start, g_end, g_weight


class XlogyBackward0(Op):
    """x * log(y), defined as 0 where x == 0 (even where y is 0), unless y is nan."""

    __slots__ = ()
    saved_inputs = (0, 1)

    def forward(self, x: Any, y: Any) -> Any:
        x, y = _float_pair(x, y)
        xp = xp_of(x if hasattr(x, "dtype") else y)
        with quiet():
            out = x * xp.log(y)
        zero = (xp.asarray(x) == 0) & ~xp.isnan(y)
        return as_array(xp.where(zero, 0, out).astype(out.dtype, copy=False))

    def backward(self, g: Any) -> tuple:
        x, y = self.saved(g)
        need = self.needs_input_grad
        gx = gy = None
        with quiet():
            if need[0]:
                # PyTorch's rule: log(y), masked to 0 where x == 0 and y <= 0.
                gx = where((data_of(x) == 0) & (data_of(y) <= 0), 0.0, g * log(y))
            if need[1]:
                gy = g * x / y
        return gx, gy


# ---------------------------------------------------------------- functions
def _operands(name: str, *values: Any) -> tuple:
    if not any(isinstance(v, Tensor) for v in values):
        raise TypeError(f"{name}(): expected at least one Tensor argument")
    for v in values:
        if not isinstance(v, (Tensor, Number)):
            raise TypeError(f"{name}(): expected a Tensor or a number, got {type(v).__name__}")
    return tuple(scalar(v) for v in values)


def _tensors(name: str, input: Any, other: Any) -> None:
    for position, (arg, v) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(v, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                f"{type(v).__name__}"
            )


def _no_complex(name: str, *values: Any) -> None:
    for v in values:
        if getattr(v, "dtype", None) is not None and v.dtype.kind == "c":
            raise RuntimeError(f"{name}: complex tensors are not supported, got {v.dtype}")


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise arctangent of input / other, in the quadrant of (other, input)."""
    _tensors("atan2", input, other)
    _no_complex("atan2", input, other)
    return Atan2Backward0.apply(*_operands("atan2", input, other))


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise sqrt(input ** 2 + other ** 2) without overflow."""
    _tensors("hypot", input, other)
    _no_complex("hypot", input, other)
    if input.dtype.kind in "biu" and other.dtype.kind in "biu":  # PyTorch has no integer kernel
        kind = torch_type_name(np.result_type(input.dtype, other.dtype))
        raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{kind}'")
    return HypotBackward0.apply(*_operands("hypot", input, other))


def _integer_division(name: str, input: Any, other: Any) -> None:
    """PyTorch's errors for a remainder of bools, or of integers by zero."""
    dtype = result_type(*(v._data if isinstance(v, Tensor) else v for v in (input, other)))
    if dtype.kind == "b":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    if dtype.kind in "iu":
        divisor = other._data if isinstance(other, Tensor) else xp_of(input._data).asarray(other)
        if not divisor.all():
            raise RuntimeError("ZeroDivisionError")


def remainder(input: Any, other: Any) -> Tensor:
    """Elementwise remainder with the sign of `other` (Python's %)."""
    _no_complex("remainder", input, other)
    values = _operands("remainder", input, other)
    _integer_division("remainder", input, other)
    return RemainderBackward0.apply(*values)


def fmod(input: Tensor, other: Any) -> Tensor:
    """Elementwise remainder with the sign of `input` (C's fmod)."""
    require_tensor("fmod", input)
    _no_complex("fmod", input, other)
    values = _operands("fmod", input, other)
    _integer_division("fmod", input, other)
    return FmodBackward0.apply(*values)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """input + weight * (end - input); `weight` is a number or a tensor."""
    _operands("lerp", input, end, weight)
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise TypeError("lerp(): input and end must be Tensors")
    if input.dtype != end.dtype:
        raise RuntimeError(
            f"lerp: expected dtype {input.dtype} for `end` but got dtype {end.dtype}"
        )
    if input.dtype.kind != "f":
        raise RuntimeError(f"lerp: expected a floating point input, got {input.dtype}")
    return LerpBackward0.apply(input, end, scalar(weight))


def xlogy(input: Any, other: Any) -> Tensor:
    """Elementwise input * log(other), 0 where input is 0 (unless other is nan)."""
    _no_complex("xlogy", input, other)
    return XlogyBackward0.apply(*_operands("xlogy", input, other))


def _reflected(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return fn(other, self)

    return method


FUNCTIONS = {
    "atan2": atan2,
    "arctan2": atan2,
    "hypot": hypot,
    "remainder": remainder,
    "fmod": fmod,
    "lerp": lerp,
    "xlogy": xlogy,
}
METHODS = {"__mod__": _binary_method(remainder), "__rmod__": _reflected(remainder)}
