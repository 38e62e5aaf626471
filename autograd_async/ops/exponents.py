"""Exponent arithmetic: logaddexp, logaddexp2, ldexp, frexp and nextafter.

logaddexp(a, b) = log(exp(a) + exp(b)) is computed without overflow; its slopes are the
softmax weights exp(a - out) and exp(b - out) (base 2 for logaddexp2).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from .dual import as_array, data_of, exp, quiet, xp_of
from .pointwise import _float_pair, _no_complex, _operands, _tensors
from .return_types import frexp as frexp_result


class _LogAddExp(Op):
    """log_base(base ** a + base ** b); d/da = base ** (a - out)."""

    __slots__ = ()
    saved_inputs = (0, 1)
    saves_output = True
    _ufunc = "logaddexp"
    _log_base = 1.0

    def forward(self, a: Any, b: Any) -> Any:
        a, b = _float_pair(a, b)
        with quiet():
            return as_array(getattr(xp_of(a if hasattr(a, "dtype") else b), self._ufunc)(a, b))

    def backward(self, g: Any) -> tuple:
        a, b, out = self.saved(g)
        need = self.needs_input_grad
        with quiet():
            ga = g * exp((a - out) * self._log_base) if need[0] else None
            gb = g * exp((b - out) * self._log_base) if need[1] else None
        return ga, gb


class LogaddexpBackward0(_LogAddExp):
    __slots__ = ()


class Logaddexp2Backward0(_LogAddExp):
    __slots__ = ()
    _ufunc = "logaddexp2"
    _log_base = math.log(2.0)


class LdexpBackward0(Op):
    """input * 2 ** other: slopes 2 ** other, and input * 2 ** other * log(2) for other."""

    __slots__ = ()
    saved_inputs = (0, 1)
    saved_for = {0: (1,), 1: (0, 1)}

    def forward(self, a: Any, b: Any) -> Any:
        a, b = _float_pair(a, b)
        with quiet():
            return as_array(a * xp_of(a if hasattr(a, "dtype") else b).exp2(b))

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        need = self.needs_input_grad
        with quiet():
            power = exp(b * math.log(2.0))
            ga = g * power if need[0] else None
            gb = g * a * power * math.log(2.0) if need[1] else None
        return ga, gb


class NextafterBackward0(Op):
    """The next float after input towards other: PyTorch's derivative is the identity for input
    (the step is below any rounding of the gradient) and zero for other."""

    __slots__ = ()

    def forward(self, a: Any, b: Any) -> Any:
        return as_array(xp_of(a).nextafter(a, b))

    def backward(self, g: Any) -> tuple:
        need = self.needs_input_grad
        return (g if need[0] else None), (g * 0 if need[1] else None)


def _floating_kernel(name: str, input: Tensor, other: Tensor) -> None:
    dtype = np.result_type(input.dtype, other.dtype)
    if dtype.kind not in "f":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_type_name(dtype)}'")


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise log(exp(input) + exp(other)), without overflow."""
    _tensors("logaddexp", input, other)
    _no_complex("logaddexp", input, other)
    _floating_kernel("logaddexp", input, other)
    return LogaddexpBackward0.apply(*_operands("logaddexp", input, other))


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise log2(2 ** input + 2 ** other), without overflow."""
    _tensors("logaddexp2", input, other)
    _no_complex("logaddexp2", input, other)
    _floating_kernel("logaddexp2", input, other)
    return Logaddexp2Backward0.apply(*_operands("logaddexp2", input, other))


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise input * 2 ** other (a float result, integers too)."""
    _tensors("ldexp", input, other)
    return LdexpBackward0.apply(*_operands("ldexp", input, other))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next representable float after input in the direction of other."""
    _tensors("nextafter", input, other)
    _floating_kernel("nextafter", input, other)
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"expected both inputs to have the same dtype, but got {input.dtype} and {other.dtype}"
        )
    return NextafterBackward0.apply(input, other)


def frexp(input: Tensor) -> tuple[Tensor, Tensor]:
    """(mantissa, exponent) with input = mantissa * 2 ** exponent and |mantissa| in [0.5, 1)."""
    require_tensor("frexp", input)
    if input.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    data = data_of(input)
    _, exponent = xp_of(data).frexp(data)
    exponent = exponent.astype(np.int32)
    # The mantissa as a product with the constant 2 ** -exponent: its gradient is that factor.
    scale = xp_of(data).ldexp(xp_of(data).ones_like(data), -exponent)
    mantissa = input * Tensor._wrap(scale, input.device)
    return frexp_result(mantissa, Tensor._wrap(exponent, input.device))


FUNCTIONS: dict[str, Any] = {
    "logaddexp": logaddexp,
    "logaddexp2": logaddexp2,
    "ldexp": ldexp,
    "nextafter": nextafter,
    "frexp": frexp,
}
