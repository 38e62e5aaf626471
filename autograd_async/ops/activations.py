"""Activation functions as single nodes: silu, leaky_relu, elu/selu/celu, softplus, mish,
hardtanh/relu6, hardsigmoid, hardswish, logsigmoid, softsign, tanhshrink; glu and prelu composed.

Each op's backward multiplies the gradient by its slope at the saved input; the slope is written
with helpers that take arrays or Tensors, so a create_graph backward is differentiable again.
Piecewise slopes follow PyTorch at the kinks (hardtanh passes the gradient strictly inside its
bounds, elu takes its negative branch at 0, hardswish has slope 0 at -3 and 1 at 3).
`nn.functional` exposes the functions with PyTorch's signatures.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from .dual import as_array, data_of, exp, mul_const, quiet, tanh, where, xp_of
from .elementwise import SigmoidBackward0, sigmoid_array
from .inplace import _through_copy
from .promotion import FLOAT32
from .reduction import normalize_dim

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _sigmoid(x: Any) -> Any:
    return SigmoidBackward0.apply(x) if isinstance(x, Tensor) else sigmoid_array(x)


def _softplus(x: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    if isinstance(x, Tensor):
        return SoftplusBackward0.apply(x, beta=beta, threshold=threshold)
    return softplus_array(x, beta, threshold)


def softplus_array(a: Any, beta: float, threshold: float) -> Any:
    """log(1 + exp(beta a)) / beta without overflow; a itself where beta a > threshold."""
    xp = xp_of(a)
    z = a * beta
    smooth = (xp.log1p(xp.exp(-xp.abs(z))) + xp.maximum(z, 0)) / beta
    return as_array(xp.where(z > threshold, a, smooth).astype(a.dtype, copy=False))


class _Activation(Op):
    """Elementwise `compute(a)` with backward `g * slope(x)`; settings live in `_args`."""

    __slots__ = ("_args",)
    saved_inputs = (0,)

    def compute(self, a: Any) -> Any:
        """The activation of a float array."""
        raise NotImplementedError

    def slope(self, x: Any) -> Any:
        """Its derivative at `x` (an array, or a Tensor for create_graph)."""
        raise NotImplementedError

    def forward(self, a: Any, **args: Any) -> Any:
        self._args = args
        with quiet():
            return as_array(self.compute(a))

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        with quiet():
            return g * self.slope(x)


class _MaskedSlope(_Activation):
    """Activations whose slope is piecewise constant: backward multiplies by a constant array."""

    __slots__ = ()

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        return mul_const(g, self.slope(data_of(x)).astype(g.dtype, copy=False))


class SiluBackward0(_Activation):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return a * sigmoid_array(a)

    def slope(self, x: Any) -> Any:
        s = _sigmoid(x)
        return s * (x * (1 - s) + 1)


class LeakyReluBackward0(_MaskedSlope):
    __slots__ = ()

    def backward(self, g: Any) -> Any:
        # PyTorch's in-place rule reads the slope off the result, which a negative slope makes
        # ambiguous, so it refuses; the out-of-place rule reads the input.
        if self._args.get("in_place") and self._args["negative_slope"] < 0:
            raise RuntimeError(
                "In-place leakyReLu backward calculation is triggered with a negative slope which "
                "is not supported. This is caused by calling in-place forward function with a "
                "negative slope, please call out-of-place version instead. File an issue at "
                "https://github.com/pytorch/pytorch if you do require supporting in-place "
                "leakRelu backward calculation with negative slope"
            )
        return super().backward(g)

    def compute(self, a: Any) -> Any:
        return xp_of(a).where(a > 0, a, a * self._args["negative_slope"])

    def slope(self, x: Any) -> Any:
        return xp_of(x).where(x > 0, 1.0, self._args["negative_slope"])


class EluBackward0(_Activation):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)): elu, selu and celu."""

    __slots__ = ()

    def compute(self, a: Any) -> Any:
        alpha, scale, input_scale = (
            self._args["alpha"],
            self._args["scale"],
            self._args["input_scale"],
        )
        xp = xp_of(a)
        negative = xp.expm1(xp.minimum(a, 0) * input_scale) * alpha
        return xp.where(a > 0, a, negative) * scale

    def slope(self, x: Any) -> Any:
        alpha, scale, input_scale = (
            self._args["alpha"],
            self._args["scale"],
            self._args["input_scale"],
        )
        positive = data_of(x) > 0
        # exp of the negative part only: exp(large x) would be inf, and inf * 0 a nan gradient
        negative = x.clamp(max=0) if isinstance(x, Tensor) else xp_of(x).minimum(x, 0)
        return where(positive, scale, exp(negative * input_scale) * (alpha * input_scale * scale))


class SoftplusBackward0(_Activation):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return softplus_array(a, self._args["beta"], self._args["threshold"])

    def slope(self, x: Any) -> Any:
        beta, threshold = self._args["beta"], self._args["threshold"]
        linear = data_of(x) * beta > threshold
        return where(linear, 1.0, _sigmoid(x * beta))


class MishBackward0(_Activation):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return a * xp_of(a).tanh(softplus_array(a, 1.0, 20.0))

    def slope(self, x: Any) -> Any:
        t = tanh(_softplus(x))
        return t + x * _sigmoid(x) * (1 - t * t)


class HardtanhBackward0(_MaskedSlope):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        # integers stay integers, as in PyTorch (NumPy would promote them to the float bounds)
        out = xp_of(a).clip(a, self._args["min_val"], self._args["max_val"])
        return out.astype(a.dtype, copy=False)

    def slope(self, x: Any) -> Any:
        return (x > self._args["min_val"]) & (x < self._args["max_val"])


class HardsigmoidBackward0(_MaskedSlope):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return xp_of(a).clip(a + 3, 0, 6) / 6

    def slope(self, x: Any) -> Any:
        return ((x > -3) & (x < 3)) / 6.0


class HardswishBackward0(_Activation):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return a * xp_of(a).clip(a + 3, 0, 6) / 6

    def slope(self, x: Any) -> Any:
        data = data_of(x)
        middle = (data > -3) & (data < 3)
        return where(data >= 3, 1.0, where(middle, x / 3 + 0.5, 0.0))


class LogSigmoidBackward0(_Activation):
    __slots__ = ()
    op_name = "log_sigmoid"

    def compute(self, a: Any) -> Any:
        xp = xp_of(a)
        return xp.minimum(a, 0) - xp.log1p(xp.exp(-xp.abs(a)))

    def slope(self, x: Any) -> Any:
        return 1 - _sigmoid(x)


class SoftsignBackward0(_Activation):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return a / (1 + xp_of(a).abs(a))

    def slope(self, x: Any) -> Any:
        d = (x.abs() if isinstance(x, Tensor) else xp_of(x).abs(x)) + 1
        return 1 / (d * d)


class TanhshrinkBackward0(_Activation):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return a - xp_of(a).tanh(a)

    def slope(self, x: Any) -> Any:
        t = tanh(x)
        return t * t


# ---------------------------------------------------------------- functions


def _checked_input(input: Any, name: str, integers: str, kernel: str | None = None) -> Tensor:
    """`input`, checked as PyTorch's kernel does: integers are refused, kept or made float32.

    `name` is the function called (named for a non-tensor), `kernel` the one PyTorch runs (named
    for a dtype it lacks): selu and celu run elu's, relu6 hardtanh's.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.kind == "f" or (integers == "keep" and input.dtype.kind in "iu"):
        return input
    if integers == "float" and input.dtype.kind in "biu":
        return input.to(dtype=FLOAT32)
    got = torch_type_name(input.dtype)
    raise NotImplementedError(f"\"{kernel or name}_cpu\" not implemented for '{got}'")


def _run(
    op: type[_Activation],
    name: str,
    input: Tensor,
    inplace: bool,
    *,
    integers: str = "refuse",
    kernel: str | None = None,
    **args: Any,
) -> Tensor:
    input = _checked_input(input, name, integers, kernel)
    if inplace:
        return _through_copy(input, lambda t: op.apply(t, **args))
    return op.apply(input, **args)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), elementwise."""
    return _run(SiluBackward0, "silu", input, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x."""
    if inplace:
        return leaky_relu_(input, negative_slope)
    return _run(LeakyReluBackward0, "leaky_relu", input, False, negative_slope=negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """leaky_relu in place; its backward refuses a negative slope, as PyTorch's."""
    return _run(
        LeakyReluBackward0,
        "leaky_relu_",
        input,
        True,
        kernel="leaky_relu",
        negative_slope=negative_slope,
        in_place=True,
    )


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _run(EluBackward0, "elu", input, inplace, alpha=alpha, scale=1.0, input_scale=1.0)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return _run(
        EluBackward0,
        "selu",
        input,
        inplace,
        kernel="elu",
        alpha=SELU_ALPHA,
        scale=SELU_SCALE,
        input_scale=1.0,
    )


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    return _run(
        EluBackward0,
        "celu",
        input,
        inplace,
        kernel="elu",
        alpha=alpha,
        scale=1.0,
        input_scale=1 / alpha,
    )


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    return _run(SoftplusBackward0, "softplus", input, False, beta=beta, threshold=threshold)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _run(MishBackward0, "mish", input, inplace)


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """x clipped to [min_val, max_val]; the gradient passes strictly inside."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run(
        HardtanhBackward0,
        "hardtanh",
        input,
        inplace,
        integers="keep",
        min_val=min_val,
        max_val=max_val,
    )


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(0, x), 6)."""
    return _run(
        HardtanhBackward0,
        "relu6",
        input,
        inplace,
        integers="keep",
        kernel="hardtanh",
        min_val=0,
        max_val=6,
    )


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _run(HardsigmoidBackward0, "hardsigmoid", input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _run(HardswishBackward0, "hardswish", input, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed without overflow."""
    return _run(LogSigmoidBackward0, "log_sigmoid", input, False)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return _run(SoftsignBackward0, "softsign", input, False, integers="float")


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return _run(TanhshrinkBackward0, "tanhshrink", input, False, integers="float")


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the halves of `input` along `dim`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"glu(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    axis = normalize_dim(dim, input.ndim)
    size = input.shape[axis]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size {size}")
    first, second = input.chunk(2, axis)
    return first * _sigmoid(second)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, with one weight or one per channel (dim 1)."""
    require_tensor("prelu", input)
    require_tensor("prelu", weight, "weight", 2)
    if input.dtype.kind != "f":
        got = torch_type_name(input.dtype)
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{got}'")
    if weight.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}"
        )
    count = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1  # PyTorch: no channels below 2-D
    if count != 1 and count != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{count} and channel size = {channels}."
        )
    if count != 1 and input.ndim >= 2:
        weight = weight.reshape((count,) + (1,) * (input.ndim - 2))
    elif count == 1:
        weight = weight.reshape(())
    return where(input._data > 0, input, weight * input)


FUNCTIONS: dict[str, Any] = {}
