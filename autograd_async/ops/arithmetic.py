"""Arithmetic ops: + - * / ** and negation with NumPy broadcasting, and matrix products.

Broadcast gradients are reduced to each input's shape by the engine (one policy, in one place), so
the rules here return gradients in the broadcast shape. Operands are promoted with PyTorch's rules
(`promotion.promote`) before NumPy sees them; the engine casts each gradient back to its input's
dtype.
"""

from __future__ import annotations

import cmath
import math
import operator
from numbers import Number
from typing import Any, ClassVar

import numpy as np

from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from ..dtypes import default_float
from .dual import (
    as_array,
    data_of,
    log,
    mul_const,
    quiet,
    swap_last,
    unsqueeze,
    where,
    xp_of,
    zeros_like,
)
from .elementwise import reciprocal
from .promotion import promote, result_type, scalar


class _ScaledSecondOperand(Op):
    """`a + alpha * b` and `a - alpha * b`: the shared rule of add and sub."""

    __slots__ = ("_alpha",)
    _combine: ClassVar[Any]
    _ufunc_name: ClassVar[str]
    _sign: ClassVar[int]

    def forward(self, a: Any, b: Any, alpha: Any = 1, out: Any = None) -> Any:
        a, b = promote(a, b)
        self._alpha = alpha
        if alpha != 1:
            b = b * alpha
        if out is not None:
            return getattr(xp_of(out), self._ufunc_name)(a, b, out=out)
        return as_array(self._combine(a, b))

    def backward(self, g: Any) -> tuple:
        gb = None
        if self.needs_input_grad[1]:
            scale = self._sign * self._alpha
            gb = g if scale == 1 else (-g if scale == -1 else g * scale)
        return g, gb


class AddBackward0(_ScaledSecondOperand):
    __slots__ = ()
    op_name = "add"
    _combine = operator.add
    _ufunc_name = "add"
    _sign = 1


class SubBackward0(_ScaledSecondOperand):
    __slots__ = ()
    op_name = "sub"
    _combine = operator.sub
    _ufunc_name = "subtract"
    _sign = -1


class RsubBackward1(Op):
    """`other - input` for a scalar `other` (Python's `2 - x`): one edge, as in PyTorch."""

    __slots__ = ()
    op_name = "rsub"

    def forward(self, a: Any, other: Any) -> Any:
        a, other = promote(a, other)
        return as_array(other - a)

    def backward(self, g: Any) -> Any:
        return -g


class MulBackward0(Op):
    __slots__ = ()
    op_name = "mul"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}  # each factor only for the other's gradient

    def forward(self, a: Any, b: Any, out: Any = None) -> Any:
        a, b = promote(a, b)
        if out is not None:
            return xp_of(out).multiply(a, b, out=out)
        return as_array(a * b)

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        return (g * b if need[0] else None), (g * a if need[1] else None)


class DivBackward0(Op):
    __slots__ = ()
    op_name = "div"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0, 1)}

    def forward(self, a: Any, b: Any, out: Any = None) -> Any:
        if _integral(a) and _integral(b):
            # True division of integers gives the default float, as in PyTorch.
            a, b = (x.astype(default_float()) if hasattr(x, "astype") else x for x in (a, b))
        a, b = promote(a, b)
        with quiet():  # x / 0 and 0 / 0 give inf and nan silently, as in PyTorch
            if out is not None:
                return xp_of(out).divide(a, b, out=out)
            return as_array(a / b)

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        with quiet():
            ga = g / b if need[0] else None
            gb = -g * a / (b * b) if need[1] else None
        return ga, gb


class DivBackward2(Op):
    """Division rounded toward zero ('trunc') or down ('floor'); its gradient is zero."""

    __slots__ = ()
    op_name = "div"

    def forward(self, a: Any, b: Any, rounding_mode: str) -> Any:
        a, b = promote(a, b)
        xp = xp_of(a if hasattr(a, "dtype") else b)
        kind = (a if hasattr(a, "dtype") else b).dtype.kind
        if kind in "iu":
            if not xp.all(b):
                raise RuntimeError("ZeroDivisionError")
            if rounding_mode == "floor":
                return as_array(xp.floor_divide(a, b))
            quotient = xp.floor_divide(a, b)  # rounded down; one up where a remainder is left
            up = (quotient < 0) & (quotient * b != a)
            return as_array(quotient + up.astype(quotient.dtype))
        with quiet():
            if rounding_mode == "floor":
                return as_array(xp.floor_divide(a, b))
            return as_array(xp.trunc(a / b))

    def backward(self, g: Any) -> tuple:
        zero = zeros_like(g)
        return zero, zero


def _integral(x: Any) -> bool:
    if isinstance(x, int):
        return True
    dtype = getattr(x, "dtype", None)
    return dtype is not None and dtype.kind in "biu"


class NegBackward0(Op):
    __slots__ = ()
    op_name = "neg"

    def forward(self, a: Any) -> Any:
        if a.dtype.kind == "b":
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return as_array(-a)

    def backward(self, g: Any) -> Any:
        return -g


def power(a: Any, b: Any) -> Any:
    """a ** b; integers to negative integer powers as in PyTorch (0, or 1 and -1 for bases
    1 and -1) where NumPy refuses them."""
    if type(a) is bool:  # `True ** t` for an integer t: NumPy would keep the bool's kind
        a = int(a)
    kind = getattr(b, "dtype", np.dtype(type(b))).kind
    if kind not in "iu" or getattr(a, "dtype", np.dtype(type(a))).kind not in "iu":
        return a**b
    xp = xp_of(b if hasattr(b, "dtype") else a)
    negative = b < 0
    if not xp.any(negative):
        return a**b
    result = a ** xp.where(negative, 0, b)
    reciprocal = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b % 2), 0))
    return xp.where(negative, reciprocal, result).astype(result.dtype)


class PowBackward0(Op):
    """`input ** exponent` for a scalar exponent (kept in a slot: one edge, as in PyTorch)."""

    __slots__ = ("_exponent",)
    op_name = "pow"
    saved_inputs = (0,)

    def forward(self, a: Any, exponent: Any) -> Any:
        if a.dtype.kind in "iu" and type(exponent) is int and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        a, p = promote(a, exponent)
        self._exponent = p
        if type(p) is int and p >= 0:
            return as_array(a**p)
        with quiet():  # 0 ** -1, (-1) ** 0.5
            return as_array(a**p)

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        p = self._exponent
        if p == 0:
            return zeros_like(g * a)
        if p == 1:
            return g
        if p == 2:
            return g * (a * 2)
        with quiet():
            return g * (p * a ** (p - 1))


class PowBackward1(Op):
    """`input ** exponent` for two tensors."""

    __slots__ = ()
    op_name = "pow"
    saved_inputs = (0, 1)
    saves_output = True

    def forward(self, a: Any, b: Any) -> Any:
        a, b = promote(a, b)
        with quiet():
            return as_array(power(a, b))

    def backward(self, g: Any) -> tuple:
        a, b, out = self.saved(g)
        need = self.needs_input_grad
        ga = gb = None
        with quiet():
            if need[0]:
                # d/da a**b = b * a**(b-1), taken as 0 where b == 0 (PyTorch's convention at 0).
                ga = where(data_of(b) == 0, 0.0, g * b * a ** (b - 1))
            if need[1]:
                a_data, b_data = data_of(a), data_of(b)
                ga_zero = (a_data == 0) & (b_data >= 0)
                gb = where(ga_zero, 0.0, g * out * log(a))
        return ga, gb


class PowBackward2(Op):
    """`base ** exponent` for a scalar base (Python's `2 ** x`): the exponent is the one edge."""

    __slots__ = ("_base",)
    op_name = "pow"
    saves_output = True

    def forward(self, b: Any, base: Any) -> Any:
        base, b = promote(base, b)
        self._base = base
        with quiet():  # 0 ** -1, (-2) ** 0.5
            return as_array(power(base, b))

    def backward(self, g: Any) -> Any:
        (out,) = self.saved(g)
        base = self._base
        if base == 0:
            # 0 ** b is 0 for b > 0 and 1 for b == 0, where PyTorch masks the slope (0 * -inf)
            # to 0; elsewhere it is out * log(0): -inf for b < 0 (out is inf), nan for nan.
            out = data_of(out)
            with quiet():
                slope = xp_of(out).where((out == 0) | (out == 1), 0, out * -math.inf)
                return mul_const(g, slope)
        if isinstance(base, complex):
            log_base = cmath.log(base)
        else:  # a negative base has no real log: nan, as PyTorch
            log_base = math.log(base) if base > 0 else math.nan
        with quiet():
            return g * out * log_base


# ------------------------------------------------------------------ matmul
class _MatmulBase(Op):
    """Matrix products with NumPy's matmul rules: 1-D operands, batch dims that broadcast."""

    __slots__ = ("_vectors",)
    op_name = "matmul"
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0,)}  # each operand only for the other's gradient

    def forward(self, a: Any, b: Any) -> Any:
        a, b = promote(a, b)
        # Which operands are 1-D: backward may have only one of them.
        self._vectors = (a.ndim == 1, b.ndim == 1)
        out = a @ b
        # NumPy multiplies bfloat16 (an ml_dtypes user type) into float32: PyTorch keeps it.
        return as_array(out if out.dtype == a.dtype else out.astype(a.dtype))

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        ga = gb = None
        a_vec, b_vec = self._vectors
        if a_vec and b_vec:  # dot: g is 0-d
            return (g * b if need[0] else None), (g * a if need[1] else None)
        if b_vec:  # (..., m, k) @ (k,) -> (..., m)
            if need[0]:
                ga = unsqueeze(g, -1) * b
            if need[1]:
                gb = (swap_last(a) @ unsqueeze(g, -1)).reshape(g.shape[:-1] + (a.shape[-1],))
            return ga, gb
        if a_vec:  # (k,) @ (..., k, n) -> (..., n)
            if need[0]:
                ga = (b @ unsqueeze(g, -1)).reshape(g.shape[:-1] + (b.shape[-2],))
            if need[1]:
                gb = unsqueeze(a, -1) * unsqueeze(g, -2)
            return ga, gb
        # Exactly two products; transposes are views that BLAS reads without a copy.
        if need[0]:
            ga = g @ swap_last(b)
        if need[1]:
            gb = swap_last(a) @ g
        return ga, gb


class MmBackward0(_MatmulBase):
    __slots__ = ()


class MvBackward0(_MatmulBase):
    __slots__ = ()


class DotBackward0(_MatmulBase):
    __slots__ = ()


class BmmBackward0(_MatmulBase):
    __slots__ = ()


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) for n in shape) or "scalar"


def _check_matmul(a: Tensor, b: Tensor) -> type[_MatmulBase]:
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {len(sa)}D and "
            f"{len(sb)}D"
        )
    k_a = sa[-1]
    k_b = sb[0] if len(sb) == 1 else sb[-2]
    if k_a != k_b:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({_dims(sa)} and {_dims(sb)})"
        )
    if len(sa) > 2 and len(sb) > 2:
        try:
            np.broadcast_shapes(sa[:-2], sb[:-2])
        except ValueError:
            raise RuntimeError(
                f"matmul: batch dimensions of shapes {tuple(sa)} and {tuple(sb)} cannot be "
                "broadcast"
            ) from None
    if len(sa) == 1:
        return DotBackward0 if len(sb) == 1 else MmBackward0 if len(sb) == 2 else BmmBackward0
    if len(sa) == 2:
        return MvBackward0 if len(sb) == 1 else MmBackward0 if len(sb) == 2 else BmmBackward0
    return BmmBackward0


# ---------------------------------------------------------------- functions
# Operands taken as they are, by exact type: a set lookup is cheaper than `isinstance`.
_PLAIN_OPERANDS = frozenset((Tensor, float, int, bool, complex))


def _operand(x: Any, op: str) -> Any:
    if isinstance(x, (Tensor, bool, int, float, complex)):
        return x
    if isinstance(x, Number):
        return scalar(x)
    raise TypeError(f"{op}(): expected a Tensor or a number, got {type(x).__name__}")


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """input + alpha * other, broadcast."""
    if type(input) not in _PLAIN_OPERANDS:
        input = _operand(input, "add")
    if type(other) not in _PLAIN_OPERANDS:
        other = _operand(other, "add")
    return AddBackward0.apply(input, other, alpha=alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """input - alpha * other, broadcast."""
    _refuse_bool_subtraction(input, other)
    return SubBackward0.apply(_operand(input, "sub"), _operand(other, "sub"), alpha=alpha)


def _refuse_bool_subtraction(input: Any, other: Any) -> None:
    """PyTorch's error for subtracting with a bool operand (tensor or Python bool)."""
    bools = [
        x is True or x is False or (isinstance(x, Tensor) and x.dtype.kind == "b")
        for x in (input, other)
    ]
    if all(bools) and isinstance(input, Tensor) and isinstance(other, Tensor):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if any(bools):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def rsub(input: Tensor, other: Any) -> Tensor:
    """other - input (PyTorch's `rsub`)."""
    _refuse_bool_subtraction(input, other)
    if isinstance(other, Tensor):
        return sub(other, input)
    return RsubBackward1.apply(input, other=_operand(other, "rsub"))


def mul(input: Any, other: Any) -> Tensor:
    """input * other, broadcast."""
    if type(input) not in _PLAIN_OPERANDS:
        input = _operand(input, "mul")
    if type(other) not in _PLAIN_OPERANDS:
        other = _operand(other, "mul")
    return MulBackward0.apply(input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """input / other, broadcast: true division (integers give the default float), or rounded
    'trunc' (toward zero) or 'floor' (down) in the operands' promoted dtype."""
    input, other = _operand(input, "div"), _operand(other, "div")
    if rounding_mode is None:
        return DivBackward0.apply(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    dtype = result_type(*(x._data if isinstance(x, Tensor) else x for x in (input, other)))
    if dtype.kind == "b":
        raise NotImplementedError(f"\"div_{rounding_mode}_cpu\" not implemented for 'Bool'")
    return DivBackward2.apply(input, other, rounding_mode=rounding_mode)


def true_divide(dividend: Any, divisor: Any) -> Tensor:
    """dividend / divisor (true division)."""
    return div(dividend, divisor)


def floor_divide(input: Any, other: Any) -> Tensor:
    """input / other rounded down (`//`), in the operands' promoted dtype."""
    return div(input, other, rounding_mode="floor")


def neg(input: Tensor) -> Tensor:
    """-input."""
    return NegBackward0.apply(input)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    """input ** exponent for tensors and scalars in either place."""
    input, exponent = _operand(input, "pow"), _operand(exponent, "pow")
    if not isinstance(exponent, Tensor):
        return PowBackward0.apply(input, exponent=exponent)
    if not isinstance(input, Tensor):
        return PowBackward2.apply(exponent, base=input)
    return PowBackward1.apply(input, exponent)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy's rules (1-D operands, broadcast batch dimensions)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(
            f"matmul(): expected Tensors, got {type(input).__name__} and {type(other).__name__}"
        )
    return _check_matmul(input, other).apply(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of one dtype (PyTorch does not promote here)."""
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape != tensor.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
            f"[{tensor.shape[0]}] to have the same number of elements, but got "
            f"{input.shape[0]} and {tensor.shape[0]} elements respectively"
        )
    if input.dtype != tensor.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found "
            f"{torch_type_name(input.dtype)} and {torch_type_name(tensor.dtype)}"
        )
    return matmul(input, tensor)


def _reflected(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return fn(other, self)

    return method


def _rtruediv(self: Tensor, other: Any) -> Any:
    """`other / self`: PyTorch's `self.reciprocal() * other` for a number (two nodes)."""
    if isinstance(other, Tensor):
        return div(other, self)
    if not isinstance(other, Number):
        return NotImplemented
    return mul(reciprocal(self), other)


def _forward(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        # A tensor or Python number by exact type first: `Number` is an ABC, slow to ask.
        if type(other) not in _PLAIN_OPERANDS and not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return fn(self, other)

    return method


def _add_method(self: Tensor, other: Any) -> Any:
    """`self + other` (and `other + self`: the tensor stays input 0, as in PyTorch).

    A number or tensor by exact type goes straight to the op: `add`'s own checks pass for them,
    and this line runs for every `+` of a model.
    """
    if type(other) in _PLAIN_OPERANDS:
        return AddBackward0.apply(self, other, alpha=1)
    if not isinstance(other, (Tensor, Number)):
        return NotImplemented
    return add(self, other)


def _mul_method(self: Tensor, other: Any) -> Any:
    """`self * other` and `other * self`, as `_add_method`."""
    if type(other) in _PLAIN_OPERANDS:
        return MulBackward0.apply(self, other)
    if not isinstance(other, (Tensor, Number)):
        return NotImplemented
    return mul(self, other)


OPERATORS = {
    "__add__": _add_method,
    "__radd__": _add_method,
    "__sub__": _forward(sub),
    "__rsub__": lambda self, other: (
        rsub(self, other) if isinstance(other, (Tensor, Number)) else NotImplemented
    ),
    "__mul__": _mul_method,
    "__rmul__": _mul_method,
    "__truediv__": _forward(div),
    "__rtruediv__": _rtruediv,
    "__floordiv__": _forward(floor_divide),
    "__rfloordiv__": _reflected(floor_divide),
    "__pow__": _forward(pow),
    "__rpow__": _reflected(pow),
    "__matmul__": lambda self, other: (
        matmul(self, other) if isinstance(other, Tensor) else NotImplemented
    ),
    "__neg__": neg,
}

FUNCTIONS = {
    "add": add,
    "sub": sub,
    "subtract": sub,
    "rsub": rsub,
    "mul": mul,
    "multiply": mul,
    "div": div,
    "divide": div,
    "true_divide": true_divide,
    "floor_divide": floor_divide,
    "neg": neg,
    "negative": neg,
    "pow": pow,
    "matmul": matmul,
    "mm": mm,
    "dot": dot,
}
