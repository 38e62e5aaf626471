"""Unary math: log1p expm1 tan atan asin acos sinh cosh asinh rsqrt erfinv, and the rounding ops
floor ceil round trunc frac sign.

Every class computes on the input's own array module; `special_array` is the one place that
asks the array's backend for SciPy's erf and erfinv (CuPy's SciPy for CuPy arrays). The rounding
ops are differentiable with a zero slope, as in PyTorch (`floor(x).requires_grad` is True).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ..core.op import Op
from ..core.tensor import Tensor
from ..devices import backend_of
from .dual import as_array, exp, quiet, xp_of, zeros_like
from .promotion import as_float

_SQRT_PI_HALF = math.sqrt(math.pi) / 2


# ------------------------------------------------------------ special functions
_GILES_CENTRE = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def _erfinv_fallback(a: Any) -> Any:
    """erfinv without SciPy: Giles' single-precision polynomials, then Newton steps on erf."""
    erf = np.vectorize(math.erf, otypes=[np.float64])
    x = a.astype(np.float64)
    with quiet():
        w = -np.log((1.0 - x) * (1.0 + x))
        centre, tail = w - 2.5, np.sqrt(w) - 3.0
    p_centre = np.polyval(_GILES_CENTRE, np.where(np.isfinite(centre), centre, 0.0))
    p_tail = np.polyval(_GILES_TAIL, np.where(np.isfinite(tail), tail, 0.0))
    y = np.where(w < 5.0, p_centre, p_tail) * x
    inside = np.abs(x) < 1
    start = np.where(inside, y, 0.0)
    for _ in range(3):
        start = start - (erf(start) - np.where(inside, x, 0.0)) * _SQRT_PI_HALF * np.exp(
            np.square(start)
        )
    edges = np.where(np.abs(x) == 1, np.copysign(np.inf, x), np.nan)
    return np.where(inside, start, edges).astype(a.dtype)


_FALLBACKS = {
    "erf": lambda a: np.vectorize(math.erf, otypes=[a.dtype])(a) if a.size else a.copy(),
    "erfinv": _erfinv_fallback,
}


def special_array(name: str, a: Any) -> Any:
    """`scipy.special.<name>` of an array, from SciPy or CuPy's SciPy as the array needs.

    Keeps the input's dtype; without SciPy, NumPy arrays take a slower pure-NumPy path.
    """
    try:
        function = backend_of(a).special(name)
    except ImportError:  # NumPy arrays without SciPy
        return as_array(_FALLBACKS[name](a))
    with quiet():  # erfinv(+-1) is +-inf, outside [-1, 1] nan
        return as_array(function(a).astype(a.dtype, copy=False))


# ------------------------------------------------------------------ the ops
class _Unary(Op):
    """A float op of one input: `compute` on arrays, `slope` on arrays or Tensors."""

    __slots__ = ()
    # Annotated as Op's is: subclasses that save their output instead save no input.
    saved_inputs: ClassVar[tuple[int, ...]] = (0,)

    @staticmethod
    def compute(a: Any) -> Any:
        """The op on a float array."""
        raise NotImplementedError

    def slope(self, x: Any) -> Any:
        """d out / d input at the saved value (array or Tensor)."""
        raise NotImplementedError

    def forward(self, a: Any) -> Any:
        with quiet():  # domain edges give inf and nan, as in PyTorch
            return as_array(self.compute(as_float(a)))

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        with quiet():
            return g * self.slope(x)


class _UnaryOfOutput(_Unary):
    """A unary op whose slope is written with its output."""

    __slots__ = ()
    saved_inputs = ()
    saves_output = True


def on(cls: type[_Unary], x: Any) -> Any:
    """The op `cls` on a Tensor (recorded) or an array (plain), for slopes used by create_graph."""
    if isinstance(x, Tensor):
        return cls.apply(x)
    with quiet():
        return as_array(cls.compute(x))


class Log1PBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).log1p(a)

    def slope(self, x: Any) -> Any:
        return 1 / (x + 1)


class Expm1Backward0(_UnaryOfOutput):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).expm1(a)

    def slope(self, y: Any) -> Any:
        return y + 1


class TanBackward0(_UnaryOfOutput):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).tan(a)

    def slope(self, y: Any) -> Any:
        return y * y + 1


class AtanBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).arctan(a)

    def slope(self, x: Any) -> Any:
        return 1 / (x * x + 1)


class AsinBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).arcsin(a)

    def slope(self, x: Any) -> Any:
        return on(RsqrtBackward0, 1 - x * x)


class AcosBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).arccos(a)

    def slope(self, x: Any) -> Any:
        return -on(RsqrtBackward0, 1 - x * x)


class SinhBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).sinh(a)

    def slope(self, x: Any) -> Any:
        return on(CoshBackward0, x)


class CoshBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).cosh(a)

    def slope(self, x: Any) -> Any:
        return on(SinhBackward0, x)


class AsinhBackward0(_Unary):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return xp_of(a).arcsinh(a)

    def slope(self, x: Any) -> Any:
        return on(RsqrtBackward0, x * x + 1)


class RsqrtBackward0(_UnaryOfOutput):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return 1 / xp_of(a).sqrt(a)

    def slope(self, y: Any) -> Any:
        return y * y * y * -0.5


class ErfinvBackward0(_UnaryOfOutput):
    __slots__ = ()

    @staticmethod
    def compute(a: Any) -> Any:
        return special_array("erfinv", a)

    def slope(self, y: Any) -> Any:
        return exp(y * y) * _SQRT_PI_HALF


class FracBackward0(Op):
    __slots__ = ()

    def forward(self, a: Any) -> Any:
        return as_array(a - xp_of(a).trunc(a))

    def backward(self, g: Any) -> Any:
        return g


class _ZeroSlope(Op):
    """Piecewise-constant ops: the dtype is kept, and the gradient is zero everywhere."""

    __slots__ = ()
    _ufunc: ClassVar[str] = ""

    def forward(self, a: Any) -> Any:
        if a.dtype.kind in "biu" and self._ufunc != "sign":
            return a.copy()  # integers are already whole
        return as_array(getattr(xp_of(a), self._ufunc)(a))

    def backward(self, g: Any) -> Any:
        return zeros_like(g)


class FloorBackward0(_ZeroSlope):
    __slots__ = ()
    _ufunc = "floor"


class CeilBackward0(_ZeroSlope):
    __slots__ = ()
    _ufunc = "ceil"


class TruncBackward0(_ZeroSlope):
    __slots__ = ()
    _ufunc = "trunc"


class SignBackward0(_ZeroSlope):
    __slots__ = ()
    _ufunc = "sign"


class RoundBackward1(_ZeroSlope):
    __slots__ = ()
    op_name = "round"

    def forward(self, a: Any, decimals: int = 0) -> Any:
        if a.dtype.kind in "biu" and decimals >= 0:
            return a.copy()
        # Half to even, as PyTorch; with decimals, PyTorch's round(x * 10**d) / 10**d.
        if decimals == 0:
            return as_array(xp_of(a).round(a))
        scale = 10.0**decimals
        return as_array((xp_of(a).round(a * scale) / scale).astype(a.dtype, copy=False))


# ---------------------------------------------------------------- functions
def _float_input(input: Any, name: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.kind == "c":
        raise RuntimeError(f"{name}: complex tensors are not supported, got {input.dtype}")


def _unary(cls: type[Op], name: str, doc: str) -> Any:
    def fn(input: Tensor) -> Tensor:
        _float_input(input, name)
        return cls.apply(input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


log1p = _unary(Log1PBackward0, "log1p", "Elementwise log(1 + input), accurate near 0.")
expm1 = _unary(Expm1Backward0, "expm1", "Elementwise exp(input) - 1, accurate near 0.")
tan = _unary(TanBackward0, "tan", "Elementwise tangent.")
atan = _unary(AtanBackward0, "atan", "Elementwise arctangent.")
asin = _unary(AsinBackward0, "asin", "Elementwise arcsine (nan outside [-1, 1]).")
acos = _unary(AcosBackward0, "acos", "Elementwise arccosine (nan outside [-1, 1]).")
sinh = _unary(SinhBackward0, "sinh", "Elementwise hyperbolic sine.")
cosh = _unary(CoshBackward0, "cosh", "Elementwise hyperbolic cosine.")
asinh = _unary(AsinhBackward0, "asinh", "Elementwise inverse hyperbolic sine.")
rsqrt = _unary(RsqrtBackward0, "rsqrt", "Elementwise 1 / sqrt(input).")
erfinv = _unary(ErfinvBackward0, "erfinv", "Elementwise inverse error function on (-1, 1).")
floor = _unary(FloorBackward0, "floor", "Elementwise floor (zero gradient).")
ceil = _unary(CeilBackward0, "ceil", "Elementwise ceiling (zero gradient).")
trunc = _unary(TruncBackward0, "trunc", "Elementwise rounding toward zero (zero gradient).")
sign = _unary(SignBackward0, "sign", "Elementwise sign: -1, 0 or 1 (zero gradient).")


def frac(input: Tensor) -> Tensor:
    """Elementwise fractional part, input - trunc(input) (floating tensors only)."""
    _float_input(input, "frac")
    if input.dtype.kind != "f":
        raise RuntimeError(f"\"frac_cpu\" not implemented for '{input.dtype}'")
    return FracBackward0.apply(input)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Elementwise rounding, half to even, to `decimals` places (zero gradient)."""
    _float_input(input, "round")
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round(): decimals must be an int, got {type(decimals).__name__}")
    return RoundBackward1.apply(input, decimals=decimals)


FUNCTIONS = {
    "log1p": log1p,
    "expm1": expm1,
    "tan": tan,
    "atan": atan,
    "arctan": atan,
    "asin": asin,
    "arcsin": asin,
    "acos": acos,
    "arccos": acos,
    "sinh": sinh,
    "cosh": cosh,
    "asinh": asinh,
    "arcsinh": asinh,
    "rsqrt": rsqrt,
    "erfinv": erfinv,
    "floor": floor,
    "ceil": ceil,
    "round": round,
    "trunc": trunc,
    "fix": trunc,
    "frac": frac,
    "sign": sign,
}
