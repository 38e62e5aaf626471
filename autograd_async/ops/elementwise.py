"""Elementwise ops: abs exp log sqrt sin cos tanh sigmoid relu clamp maximum minimum where.

Ops that produce floats from integer tensors (exp, log, ...) compute in float32, as PyTorch does.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from . import dual
from .dual import as_array, data_of, mul_const, quiet, sign, xp_of
from .promotion import as_float, promote, result_type, scalar


class AbsBackward0(Op):
    __slots__ = ()
    saved_inputs = (0,)
    complex_conjugate_rule = True  # grad * sgn(z): PyTorch's rule for complex z as it stands

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).abs(a))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        if isinstance(a, Tensor) and a.dtype.kind == "c":
            # sgn(z) = z / |z| depends on z for complex values: a differentiable factor
            size = a.abs()
            return g * (a / size.where(size != 0, 1)).where(size != 0, 0)
        return mul_const(g, sign(a))


class ExpBackward0(Op):
    __slots__ = ()
    saves_output = True

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).exp(as_float(a)))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        return g * y


class LogBackward0(Op):
    __slots__ = ()
    saved_inputs = (0,)

    def forward(self, a: Any) -> Any:
        with quiet():  # log(0) is -inf, log(-1) nan
            return as_array(xp_of(a).log(as_float(a)))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        with quiet():
            return g / a


class SqrtBackward0(Op):
    __slots__ = ()
    saves_output = True

    def forward(self, a: Any) -> Any:
        with quiet():  # sqrt(-1) is nan
            return as_array(xp_of(a).sqrt(as_float(a)))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        with quiet():  # the slope at 0 is inf
            return g / (y * 2)


class ReciprocalBackward0(Op):
    __slots__ = ()
    saves_output = True

    def forward(self, a: Any) -> Any:
        with quiet():  # 1 / 0 is inf
            return as_array(xp_of(a).reciprocal(as_float(a)))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        with quiet():  # 0 * inf
            return -g * (y * y)


class SinBackward0(Op):
    __slots__ = ()
    saved_inputs = (0,)

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).sin(as_float(a)))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        return g * dual.cos(a)


class CosBackward0(Op):
    __slots__ = ()
    saved_inputs = (0,)

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).cos(as_float(a)))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        return -(g * dual.sin(a))


class TanhBackward0(Op):
    __slots__ = ()
    saves_output = True

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).tanh(as_float(a)))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        return g * (1 - y * y)


def sigmoid_array(a: Any) -> Any:
    """1 / (1 + exp(-a)) without overflow: exp only ever sees -|a|."""
    xp = xp_of(a)
    if a.dtype.kind == "c":  # no sign to split on: the plain formula, as PyTorch's kernel
        return as_array(1 / (1 + xp.exp(-a)))
    e = xp.exp(-xp.abs(a))
    r = 1 / (1 + e)
    return as_array(xp.where(a >= 0, r, e * r))


class SigmoidBackward0(Op):
    __slots__ = ()
    saves_output = True

    def forward(self, a: Any) -> Any:
        return sigmoid_array(as_float(a))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        return g * (y * (1 - y))


class ReluBackward0(Op):
    __slots__ = ("_handed",)
    saves_output = True
    takes_handed_grad = True

    def forward(self, a: Any, into_input: bool = False) -> Any:
        """max(a, 0); `into_input` writes it over `a`, a temporary that nothing else can reach
        (see `nn.functional.relu_over_temporary`): a fresh 1 MB output costs as much as the max."""
        self._handed = None
        xp = xp_of(a)
        if into_input and a.dtype.kind == "f":
            return xp.maximum(a, 0, out=a)
        return as_array(xp.maximum(a, 0))

    def backward(self, g: Any) -> Any:
        (y,) = self.saved(g)
        if isinstance(g, Tensor):
            mask = data_of(y) > 0
            return mul_const(g, mask.astype(g.dtype))
        handed, self._handed = self._handed, None
        xp = xp_of(g)
        out = g if g is handed and self._unobserved() else xp.empty(y.shape, g.dtype)
        return xp.multiply(g, y > 0, out=out)

    def take_handed(self, grad: Any) -> None:
        """Note `grad`, made for this node alone by the node that feeds it (`Op.hand_over`)."""
        self._handed = grad if self._unobserved() else None

    def _unobserved(self) -> bool:
        """Whether nothing but this backward can see the gradient this node receives.

        Its feeding node rules out its own post-hooks before handing a gradient over; what
        remains is who may look at it here: this node's hooks (tensor hooks, retain_grad, pre-
        and post-hooks all register on the node) and a `grad()` that captures the gradient of the
        output, which holds the output tensor while it runs. Checked when the gradient is handed
        over (after the feeding node dropped its own hold on the output) as well as when it is
        used, so a gradient captured while this node did not run is never marked.
        """
        return self._hooks is None and self._out_ref() is None

    def release_saved(self) -> None:
        """Drop the saved output, and any gradient handed over but not used."""
        super().release_saved()
        self._handed = None


class ClampBackward1(Op):
    __slots__ = ("_min", "_max")
    saved_inputs = (0,)
    op_name = "clamp"

    def forward(self, a: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
        self._min, self._max = min, max
        dtype = result_type(a, *(v for v in (min, max) if v is not None))
        if dtype != a.dtype:
            a = a.astype(dtype)
        return as_array(xp_of(a).clip(a, min, max))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        a = data_of(a)
        # The gradient passes where min <= a <= max, bounds included (PyTorch's convention).
        keep = None
        if self._min is not None:
            keep = a >= self._min
        if self._max is not None:
            below = a <= self._max
            keep = below if keep is None else keep & below
        assert keep is not None  # clamp() refuses two None bounds before recording
        return mul_const(g, keep.astype(g.dtype))


class ClampBackward0(Op):
    """clamp with tensor bounds (either may be None or a scalar): PyTorch's rule for each input.

    The input takes the gradient where min <= x <= max; min where x < min (and min < max); max
    where x > max, or everywhere that max < min (the output is max there).
    """

    __slots__ = ()
    op_name = "clamp"
    saved_inputs = (0, 1, 2)

    def forward(self, a: Any, low: Any, high: Any) -> Any:
        dtype = result_type(a, *(v for v in (low, high) if v is not None))
        xp = xp_of(a)
        out = a.astype(dtype) if dtype != a.dtype else a
        if low is not None:
            out = xp.maximum(out, low)
        if high is not None:
            out = xp.minimum(out, high)
        return as_array(out.astype(dtype, copy=False))

    def backward(self, g: Any) -> tuple:
        a, low, high = (data_of(v) for v in self.saved(g))
        need = self.needs_input_grad
        xp = xp_of(a)
        keep = xp.ones(a.shape, bool)
        if low is not None:
            keep = keep & (a >= low)
        if high is not None:
            keep = keep & (a <= high)
        g_low = g_high = None
        if need[1]:
            below = a < low
            g_low = mul_const(
                g, (below & (low < high) if high is not None else below).astype(g.dtype)
            )
        if need[2]:
            above = a > high
            g_high = mul_const(
                g, (above | (high < low) if low is not None else above).astype(g.dtype)
            )
        g_a = mul_const(g, keep.astype(g.dtype)) if need[0] else None
        return g_a, g_low, g_high


class MaximumBackward0(Op):
    __slots__ = ()
    saved_inputs = (0, 1)

    def forward(self, a: Any, b: Any) -> Any:
        a, b = promote(a, b)
        return as_array(xp_of(a).maximum(a, b))

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        return _split_between(g, data_of(a) > data_of(b), data_of(a) == data_of(b), self)


class MinimumBackward0(Op):
    __slots__ = ()
    saved_inputs = (0, 1)

    def forward(self, a: Any, b: Any) -> Any:
        a, b = promote(a, b)
        return as_array(xp_of(a).minimum(a, b))

    def backward(self, g: Any) -> tuple:
        a, b = self.saved(g)
        return _split_between(g, data_of(a) < data_of(b), data_of(a) == data_of(b), self)


def _split_between(g: Any, wins: Any, ties: Any, node: Op) -> tuple:
    # Ties share the gradient evenly, as PyTorch's maximum/minimum do.
    dtype = g.dtype
    weight = wins.astype(dtype) + ties.astype(dtype) * 0.5
    need = node.needs_input_grad
    ga = mul_const(g, weight) if need[0] else None
    gb = mul_const(g, 1 - weight) if need[1] else None
    return ga, gb


class WhereBackward0(Op):
    __slots__ = ()
    saved_inputs = (0,)

    def forward(self, cond: Any, a: Any, b: Any) -> Any:
        a, b = promote(a, b)
        out = xp_of(cond).where(cond, a, b)
        if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
            out = out.astype(result_type(a, b))  # two Python scalars: float32, not float64
        return as_array(out)

    def backward(self, g: Any) -> tuple:
        (cond,) = self.saved(g)
        cond = data_of(cond)
        need = self.needs_input_grad
        ga = dual.where(cond, g, 0.0) if need[1] else None
        gb = dual.where(cond, 0.0, g) if need[2] else None
        return None, ga, gb


# ---------------------------------------------------------------- functions
def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise |input|."""
    return AbsBackward0.apply(input)


def exp(input: Tensor) -> Tensor:
    """Elementwise e ** input."""
    return ExpBackward0.apply(input)


def log(input: Tensor) -> Tensor:
    """Elementwise natural logarithm."""
    return LogBackward0.apply(input)


def sqrt(input: Tensor) -> Tensor:
    """Elementwise square root."""
    return SqrtBackward0.apply(input)


def sin(input: Tensor) -> Tensor:
    """Elementwise sine."""
    return SinBackward0.apply(input)


def cos(input: Tensor) -> Tensor:
    """Elementwise cosine."""
    return CosBackward0.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return TanhBackward0.apply(input)


def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic function 1 / (1 + exp(-input))."""
    return SigmoidBackward0.apply(input)


def relu(input: Tensor) -> Tensor:
    """Elementwise max(input, 0)."""
    return ReluBackward0.apply(input)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (either bound may be None)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return ClampBackward0.apply(input, scalar(min), scalar(max))
    return ClampBackward1.apply(
        input, min=None if min is None else scalar(min), max=None if max is None else scalar(max)
    )


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """max(input, min)."""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """min(input, max)."""
    return clamp(input, max=max)


def _two_real_tensors(name: str, input: Any, other: Any) -> None:
    # PyTorch takes no numbers here (clamp does) and refuses complex values, which lack an order.
    require_tensor(name, input)
    require_tensor(name, other, "other", 2)
    if input.dtype.kind == "c" or other.dtype.kind == "c":
        raise RuntimeError(f"{name} not implemented for complex tensors.")


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum of two tensors (ties share the gradient)."""
    _two_real_tensors("maximum", input, other)
    return MaximumBackward0.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum of two tensors (ties share the gradient)."""
    _two_real_tensors("minimum", input, other)
    return MinimumBackward0.apply(input, other)


_MISSING: Any = object()


def where(condition: Tensor, input: Any = _MISSING, other: Any = _MISSING) -> Any:
    """`input` where `condition` holds, else `other` (scalars allowed for either); with the
    condition alone, the indices where it holds, one tensor per dimension (`nonzero(as_tuple=True)`)."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): condition must be a Tensor, got {type(condition).__name__}")
    if input is _MISSING and other is _MISSING:
        return condition.nonzero(as_tuple=True)  # installed by ops.gather
    if input is _MISSING or other is _MISSING:
        raise TypeError(
            "where() takes the condition alone, or the condition, input and other; got "
            f"{'input' if other is _MISSING else 'other'} without the other"
        )
    if condition.dtype.kind != "b":
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype}"
        )
    return WhereBackward0.apply(condition, scalar(input), scalar(other))


def square(input: Tensor) -> Tensor:
    """input ** 2."""
    require_tensor("square", input)
    return input**2


def reciprocal(input: Tensor) -> Tensor:
    """Elementwise 1 / input (integers give float32)."""
    require_tensor("reciprocal", input)
    return ReciprocalBackward0.apply(input)


FUNCTIONS = {
    "abs": abs,
    "exp": exp,
    "log": log,
    "sqrt": sqrt,
    "sin": sin,
    "cos": cos,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "relu": relu,
    "clamp": clamp,
    "clip": clamp,
    "clamp_min": clamp_min,
    "clamp_max": clamp_max,
    "maximum": maximum,
    "minimum": minimum,
    "where": where,
    "square": square,
    "reciprocal": reciprocal,
}
METHODS = {"__abs__": abs}
