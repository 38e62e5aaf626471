"""torch.special's functions on SciPy's `scipy.special` (CuPy's `cupyx.scipy.special` on cuda).

Each op is one line: a SciPy function name and the slope of its derivative, written with
operators and other ops of this module so that the slope works on arrays and, for
`create_graph=True`, on Tensors. Ops PyTorch gives no gradient (the Bessel functions of
`torch.special`, the orthogonal polynomials) record nothing; a gradient PyTorch declares missing
(`zeta` in its first argument, `gammainc` in its first) raises PyTorch's NotImplementedError when
backward reaches it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from ..devices import backend_of, enters_device
from .dual import as_array, cos, data_of, exp, log, quiet, where, xp_of
from .inplace import _through_copy
from .nn_ops import erf
from .pointwise import _float_pair, xlogy
from .polynomials import POLYNOMIALS
from .promotion import as_float, scalar
from .special import Log1PBackward0, erfinv, expm1, log1p, on

_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def scipy_special(name: str, *arrays: Any) -> Any:
    """`scipy.special.<name>(*arrays)` from the first array's backend, in that array's dtype.

    Half-precision arrays compute in float32 (SciPy has no float16 or bfloat16 loops).
    """
    first = next(a for a in arrays if hasattr(a, "dtype"))
    dtype = first.dtype
    wide = [
        a.astype("float32")
        if getattr(a, "dtype", None) is not None and a.dtype.itemsize < 4 and a.dtype.kind == "f"
        else a
        for a in arrays
    ]
    with quiet():
        out = backend_of(first).special(name)(*wide)
    return as_array(out.astype(dtype, copy=False))


def not_implemented(name: str) -> NotImplementedError:
    """PyTorch's error for a gradient it does not define."""
    return NotImplementedError(f"the derivative for '{name}' is not implemented.")


# ------------------------------------------------------------------ unary ops
class _ScipyUnary(Op):
    """`scipy.special.<scipy_name>` of one float input; `slope(self, x, y)` is d y / d x."""

    __slots__ = ()
    saved_inputs = (0,)
    saves_output = True
    scipy_name: ClassVar[str] = ""

    # Subclasses with parameters of their own (polygamma's n) take them after `a`.
    def forward(self, a: Any, *args: Any, **params: Any) -> Any:
        return self.compute(as_float(a), *args, **params)

    def compute(self, a: Any, *args: Any, **params: Any) -> Any:
        """The op on a float array."""
        return scipy_special(self.scipy_name, a)

    def slope(self, x: Any, y: Any) -> Any:
        """d output / d input at input `x` and output `y` (arrays or Tensors)."""
        raise NotImplementedError

    def backward(self, g: Any) -> Any:
        x, y = self.saved(g)
        with quiet():
            return g * self.slope(x, y)


def _unary_op(name: str, scipy_name: str, slope: Any = None, **extra: Any) -> type[_ScipyUnary]:
    """An op class `name` computing `scipy_name`, with `slope(x, y)` as its derivative."""
    body: dict[str, Any] = {"__slots__": (), "scipy_name": scipy_name, **extra}
    if slope is not None:
        body["slope"] = lambda self, x, y: slope(x, y)
    return type(name, (_ScipyUnary,), body)


def _call(cls: type[_ScipyUnary], x: Any, **params: Any) -> Any:
    """The op `cls` of a Tensor (recorded) or of an array (plain): slopes built from ops."""
    if isinstance(x, Tensor):
        return cls.apply(x, **params)
    return object.__new__(cls).compute(x, **params)


def _gammaln(x: Any) -> Any:
    return _call(LgammaBackward0, x)


def _polygamma(n: int, x: Any) -> Any:
    if n == 0:
        return _call(DigammaBackward0, x)
    return _call(PolygammaBackward0, x, n=n)


class PolygammaBackward0(_ScipyUnary):
    __slots__ = ("_n",)
    saves_output = False

    def forward(self, a: Any, n: int = 0) -> Any:
        self._n = n
        return self.compute(as_float(a), n=n)

    def compute(self, a: Any, n: int = 0) -> Any:
        return scipy_special("polygamma", xp_of(a).asarray(n, dtype=a.dtype), a)

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        return g * _polygamma(self._n + 1, x)


def _sign(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.detach().sign()  # a constant factor of the slope
    return xp_of(x).sign(x)


def _safe_div(num: Any, x: Any, at_zero: float) -> Any:
    """num / x, with `at_zero` where x is 0 (the limit of i1-type slopes)."""
    data = data_of(x)
    zero = data == 0
    return where(zero, at_zero, num / where(zero, 1.0, x))


ErfcBackward0 = _unary_op("ErfcBackward0", "erfc", lambda x, y: -_TWO_OVER_SQRT_PI * exp(-x * x))
SpecialErfcxBackward0 = _unary_op(
    "SpecialErfcxBackward0", "erfcx", lambda x, y: 2 * x * y - _TWO_OVER_SQRT_PI
)
SpecialNdtrBackward0 = _unary_op(
    "SpecialNdtrBackward0", "ndtr", lambda x, y: exp(x * x * -0.5) / _SQRT_2PI
)
SpecialNdtriBackward0 = _unary_op(
    "SpecialNdtriBackward0", "ndtri", lambda x, y: exp(y * y * 0.5) * _SQRT_2PI
)
SpecialLogNdtrBackward0 = _unary_op(
    "SpecialLogNdtrBackward0", "log_ndtr", lambda x, y: exp(x * x * -0.5 - y) / _SQRT_2PI
)


def _lgamma(self: Any, a: Any) -> Any:
    out = scipy_special("gammaln", a)
    return as_array(xp_of(a).where(a == -math.inf, math.inf, out).astype(a.dtype, copy=False))


LgammaBackward0 = _unary_op(  # SciPy's gammaln(-inf) is -inf; PyTorch's lgamma gives inf
    "LgammaBackward0", "gammaln", lambda x, y: _polygamma(0, x), compute=_lgamma
)
DigammaBackward0 = _unary_op("DigammaBackward0", "psi", lambda x, y: _polygamma(1, x))
I0Backward0 = _unary_op("I0Backward0", "i0", lambda x, y: _call(SpecialI1Backward0, x))
SpecialI0EBackward0 = _unary_op(
    "SpecialI0EBackward0", "i0e", lambda x, y: _call(SpecialI1EBackward0, x) - _sign(x) * y
)
# Annotated: the slopes above name these two before they are made.
SpecialI1Backward0: type[_ScipyUnary] = _unary_op(
    "SpecialI1Backward0", "i1", lambda x, y: _call(I0Backward0, x) - _safe_div(y, x, 0.5)
)
SpecialI1EBackward0: type[_ScipyUnary] = _unary_op(
    "SpecialI1EBackward0",
    "i1e",
    lambda x, y: _call(SpecialI0EBackward0, x) - y * _sign(x) - _safe_div(y, x, 0.5),
)
Exp2Backward0 = _unary_op("Exp2Backward0", "exp2", lambda x, y: y * math.log(2.0))
Log2Backward0 = _unary_op(
    "Log2Backward0",
    "log2",
    lambda x, y: 1 / (x * math.log(2.0)),
    compute=lambda self, a: as_array(xp_of(a).log2(a)),
)
Log10Backward0 = _unary_op(
    "Log10Backward0",
    "log10",
    lambda x, y: 1 / (x * math.log(10.0)),
    compute=lambda self, a: as_array(xp_of(a).log10(a)),
)
SpecialEntrBackward0 = _unary_op("SpecialEntrBackward0", "entr", lambda x, y: -(log(x) + 1))


def _sinc_slope(x: Any, y: Any) -> Any:
    px = x * math.pi
    return _safe_div(cos(px) - y, x, 0.0)


def _sinc(self: Any, a: Any) -> Any:
    return as_array(xp_of(a).sinc(a))


SincBackward0 = _unary_op("SincBackward0", "sinc", _sinc_slope, compute=_sinc)


def _logit(self: Any, a: Any, eps: Any = None) -> Any:
    xp = xp_of(a)
    if eps is not None:
        a = xp.clip(a, eps, 1 - eps)
    with quiet():
        return as_array(xp.log(a / (1 - a)))


class LogitBackward0(_ScipyUnary):
    __slots__ = ("_eps",)
    saves_output = False
    compute = _logit

    def forward(self, a: Any, eps: Any = None) -> Any:
        self._eps = eps
        return _logit(self, as_float(a), eps)

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        with quiet():
            grad = g / (x * (1 - x))
        if self._eps is None:
            return grad
        data = data_of(x)
        return where((data < self._eps) | (data > 1 - self._eps), 0.0, grad)


class MvlgammaBackward0(_ScipyUnary):
    """The multivariate log-gamma: sum over j < p of lgamma(x - j / 2), plus a constant."""

    __slots__ = ("_p",)
    saves_output = False

    def forward(self, a: Any, p: int = 1) -> Any:
        self._p = p
        return self.compute(as_float(a), p=p)

    def compute(self, a: Any, p: int = 1) -> Any:
        out = sum(scipy_special("gammaln", a - j / 2) for j in range(p))
        return as_array((out + p * (p - 1) / 4 * math.log(math.pi)).astype(a.dtype, copy=False))

    def backward(self, g: Any) -> Any:
        (x,) = self.saved(g)
        return g * sum(_polygamma(0, x - j / 2) for j in range(self._p))


# -------------------------------------------------------- ops without a gradient
class _NoGradient(Op):
    """A SciPy function PyTorch computes without a gradient: never recorded (see `_plain`)."""

    __slots__ = ()
    scipy_name: ClassVar[str] = ""

    def forward(self, *arrays: Any) -> Any:
        return scipy_special(
            self.scipy_name, *[as_float(a) if hasattr(a, "dtype") else a for a in arrays]
        )


def _plain(name: str, scipy_name: str) -> type[_NoGradient]:
    return type(name, (_NoGradient,), {"__slots__": (), "scipy_name": scipy_name})


_PLAIN = {
    "bessel_j0": _plain("SpecialBesselJ0", "j0"),
    "bessel_j1": _plain("SpecialBesselJ1", "j1"),
    "bessel_y0": _plain("SpecialBesselY0", "y0"),
    "bessel_y1": _plain("SpecialBesselY1", "y1"),
    "modified_bessel_i0": _plain("SpecialModifiedBesselI0", "i0"),
    "modified_bessel_i1": _plain("SpecialModifiedBesselI1", "i1"),
    "modified_bessel_k0": _plain("SpecialModifiedBesselK0", "k0"),
    "modified_bessel_k1": _plain("SpecialModifiedBesselK1", "k1"),
    "scaled_modified_bessel_k0": _plain("SpecialScaledModifiedBesselK0", "k0e"),
    "scaled_modified_bessel_k1": _plain("SpecialScaledModifiedBesselK1", "k1e"),
}


class SpecialSphericalBesselJ0(Op):
    __slots__ = ()

    def forward(self, a: Any) -> Any:
        a = as_float(a)
        xp = xp_of(a)
        with quiet():
            out = xp.where(a == 0, 1, xp.sin(a) / xp.where(a == 0, 1, a))
            out = xp.where(xp.isinf(a), 0, out)
        return as_array(out.astype(a.dtype, copy=False))


class SpecialAiryAi(Op):
    __slots__ = ()

    def forward(self, a: Any) -> Any:
        a = as_float(a)
        wide = a.astype("float32") if a.dtype.itemsize < 4 else a
        out = backend_of(a).special("airy")(wide)[0]
        return as_array(out.astype(a.dtype, copy=False))


# ------------------------------------------------------------- binary ops
class _ScipyBinary(Op):
    """`scipy.special.<scipy_name>(a, b)` of two float operands (broadcast, promoted)."""

    __slots__ = ()
    saved_inputs = (0, 1)
    scipy_name: ClassVar[str] = ""

    def forward(self, a: Any, b: Any) -> Any:
        a, b = _float_pair(a, b)
        if not hasattr(a, "dtype"):
            a = xp_of(b).asarray(a, dtype=b.dtype)
        return scipy_special(self.scipy_name, a, b)


class SpecialXlog1PyBackward0(_ScipyBinary):
    __slots__ = ()
    scipy_name = "xlog1py"

    def backward(self, g: Any) -> tuple:
        x, y = self.saved(g)
        need = self.needs_input_grad
        with quiet():
            gx = (
                where((data_of(x) == 0) & (data_of(y) <= -1), 0.0, g * on(Log1PBackward0, y))
                if need[0]
                else None
            )
            gy = g * x / (y + 1) if need[1] else None
        return gx, gy


class SpecialZetaBackward0(_ScipyBinary):
    __slots__ = ()
    scipy_name = "zeta"

    def backward(self, g: Any) -> tuple:
        if self.needs_input_grad[0]:
            raise not_implemented("zeta")
        x, q = self.saved(g)
        return None, g * -x * _call_binary(SpecialZetaBackward0, x + 1, q)


class _IncompleteGamma(_ScipyBinary):
    __slots__ = ()
    sign: ClassVar[float] = 1.0
    torch_name: ClassVar[str] = ""

    def backward(self, g: Any) -> tuple:
        if self.needs_input_grad[0]:
            raise not_implemented(f"{self.torch_name}: input")
        a, x = self.saved(g)
        with quiet():
            density = exp(-x + (a - 1) * log(x) - _gammaln(a))
        return None, g * density * self.sign


class IgammaBackward0(_IncompleteGamma):
    __slots__ = ()
    scipy_name = "gammainc"
    torch_name = "igamma"


class IgammacBackward0(_IncompleteGamma):
    __slots__ = ()
    scipy_name = "gammaincc"
    sign = -1.0
    torch_name = "igammac"


def _call_binary(cls: type[_ScipyBinary], a: Any, b: Any) -> Any:
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return cls.apply(a, b)
    return scipy_special(cls.scipy_name, a, b)


# ---------------------------------------------------------------- functions
def _checked(name: str, input: Any) -> None:
    require_tensor(name, input)
    if input.dtype.kind == "c":
        raise RuntimeError(f"{name}: complex tensors are not supported, got {input.dtype}")


def _unary_function(cls: type[Op], name: str, doc: str) -> Any:
    def fn(input: Tensor) -> Tensor:
        _checked(name, input)
        return cls.apply(input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _plain_function(cls: type[Op], name: str, doc: str) -> Any:
    def fn(input: Tensor) -> Tensor:
        _checked(name, input)
        return cls.apply(input.detach())  # PyTorch records no gradient for these

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary_function(cls: type[Op], name: str, doc: str) -> Any:
    def fn(input: Any, other: Any) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            require_tensor(name, input)
        for value in (input, other):
            if isinstance(value, Tensor) and value.dtype.kind == "c":
                raise RuntimeError(f"{name}: complex tensors are not supported")
        return cls.apply(scalar(input), scalar(other))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


erfc = _unary_function(ErfcBackward0, "erfc", "Elementwise complementary error function.")
erfcx = _unary_function(SpecialErfcxBackward0, "erfcx", "Scaled erfc: exp(x**2) * erfc(x).")
ndtr = _unary_function(SpecialNdtrBackward0, "ndtr", "The standard normal CDF.")
ndtri = _unary_function(SpecialNdtriBackward0, "ndtri", "The inverse of the standard normal CDF.")
log_ndtr = _unary_function(SpecialLogNdtrBackward0, "log_ndtr", "log of the standard normal CDF.")
lgamma = _unary_function(LgammaBackward0, "lgamma", "log |Gamma(input)|, elementwise.")
digamma = _unary_function(DigammaBackward0, "digamma", "The logarithmic derivative of Gamma.")
i0 = _unary_function(I0Backward0, "i0", "Modified Bessel function of the first kind, order 0.")
i0e = _unary_function(SpecialI0EBackward0, "i0e", "exp(-|x|) * i0(x), elementwise.")
i1 = _unary_function(
    SpecialI1Backward0, "i1", "Modified Bessel function of the first kind, order 1."
)
i1e = _unary_function(SpecialI1EBackward0, "i1e", "exp(-|x|) * i1(x), elementwise.")
exp2 = _unary_function(Exp2Backward0, "exp2", "2 ** input, elementwise.")
log2 = _unary_function(Log2Backward0, "log2", "Base-2 logarithm, elementwise.")
log10 = _unary_function(Log10Backward0, "log10", "Base-10 logarithm, elementwise.")
entr = _unary_function(SpecialEntrBackward0, "entr", "-x * log(x) elementwise (0 at 0).")
sinc = _unary_function(SincBackward0, "sinc", "sin(pi x) / (pi x), 1 at 0.")
xlog1py = _binary_function(SpecialXlog1PyBackward0, "xlog1py", "input * log1p(other), 0 at 0.")
zeta = _binary_function(SpecialZetaBackward0, "zeta", "The Hurwitz zeta function.")
gammainc = _binary_function(IgammaBackward0, "gammainc", "Regularized lower incomplete gamma.")
gammaincc = _binary_function(IgammacBackward0, "gammaincc", "Regularized upper incomplete gamma.")
spherical_bessel_j0 = _plain_function(
    SpecialSphericalBesselJ0,
    "spherical_bessel_j0",
    "Spherical Bessel function of the first kind, order 0.",
)
airy_ai = _plain_function(SpecialAiryAi, "airy_ai", "The Airy function Ai.")


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma, elementwise."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(
            f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}"
        )
    _checked("polygamma", input)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return DigammaBackward0.apply(input)
    return PolygammaBackward0.apply(input, n=n)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension p, elementwise."""
    _checked("mvlgamma", input)
    if not isinstance(p, int) or p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if bool((data_of(input) <= (p - 1) / 2).any()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2:g}")
    return MvlgammaBackward0.apply(input, p=p)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(input / (1 - input)), with input clamped to [eps, 1 - eps] when eps is given."""
    _checked("logit", input)
    return LogitBackward0.apply(input, eps=eps)


FUNCTIONS = {
    "erfc": erfc,
    "lgamma": lgamma,
    "digamma": digamma,
    "polygamma": polygamma,
    "mvlgamma": mvlgamma,
    "i0": i0,
    "exp2": exp2,
    "log2": log2,
    "log10": log10,
    "sinc": sinc,
    "logit": logit,
}

SPECIAL = {
    "erfcx": erfcx,
    "ndtr": ndtr,
    "ndtri": ndtri,
    "log_ndtr": log_ndtr,
    "gammaln": lgamma,
    "psi": digamma,
    "multigammaln": mvlgamma,
    "i0e": i0e,
    "i1": i1,
    "i1e": i1e,
    "entr": entr,
    "xlog1py": xlog1py,
    "zeta": zeta,
    "gammainc": gammainc,
    "gammaincc": gammaincc,
    "spherical_bessel_j0": spherical_bessel_j0,
    "airy_ai": airy_ai,
}
SPECIAL.update(
    {
        name: _plain_function(cls, name, f"PyTorch's special.{name} (no gradient).")
        for name, cls in _PLAIN.items()
    }
)
SPECIAL.update(POLYNOMIALS)
"""The functions only `autograd_async.special` names (FUNCTIONS are top level too)."""


def _in_place(fn: Any, name: str) -> Any:
    """The in-place form `name` of a float-valued function (PyTorch's error for integer tensors)."""

    @enters_device
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        require_tensor(name, self)
        if self.dtype.kind not in "fc":
            raise RuntimeError(
                f"result type Float can't be cast to the desired output type "
                f"{torch_type_name(self.dtype)}"
            )
        return _through_copy(self, lambda x, *a: fn(x, *a, **kwargs), *args)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {name[:-1]}."
    return method


def _methods() -> dict[str, Any]:
    methods: dict[str, Any] = {"polygamma": lambda self, n: polygamma(n, self)}
    plain = dict(FUNCTIONS, erf=erf, erfinv=erfinv, expm1=expm1, log1p=log1p, xlogy=xlogy)
    plain["polygamma"] = methods["polygamma"]
    for name, fn in plain.items():
        methods[f"{name}_"] = _in_place(fn, f"{name}_")
    return methods


METHODS = _methods()
