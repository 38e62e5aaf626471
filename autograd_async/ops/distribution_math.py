"""The math that probability distributions need: draws of Gamma (with implicit reparameterised
gradients) and Binomial variables, log Bessel functions; lgamma, digamma, polygamma and mvlgamma
are `special_functions`' own, re-exported for the distributions.

The special functions come from SciPy (CuPy's SciPy for CuPy arrays) through `special_array`.
`_standard_gamma` differentiates its samples with respect to the concentration the way PyTorch
does, by implicit reparameterisation: a sample x of Gamma(a, 1) is F^-1(u; a) for a uniform u,
so dx/da = -(dF/da)(x; a) / f(x; a), where F is the regularised lower incomplete gamma function.
SciPy has no dF/da, so it is taken by a Richardson-extrapolated central difference in float64
(about 1e-10 relative error, far below float32's resolution).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from ..creation import Generator
from ..devices import backend_of, launching
from .dual import as_array, data_of, quiet, xp_of
from .random_fills import device_state, require_floating
from .special import _Unary, special_array
from .special_functions import digamma, lgamma, mvlgamma, polygamma


def digamma_array(a: Any) -> Any:
    """digamma of an array."""
    return special_array("psi", a)


def polygamma_array(n: int, a: Any) -> Any:
    """polygamma(n, a) of an array, in its dtype (digamma for n = 0)."""
    if n == 0:
        return special_array("psi", a)
    function = _backend_special(a, "polygamma")
    with quiet():
        return as_array(function(n, a).astype(a.dtype, copy=False))


def _backend_special(a: Any, name: str) -> Any:
    return backend_of(a).special(name)


# ------------------------------------------------------------------ log Bessel I0, I1
def _log_bessel_array(order: int, x: Any) -> Any:
    """log I_order(x) for x > 0, from the exponentially scaled Bessel functions."""
    scaled = special_array("i0e" if order == 0 else "i1e", x)
    with quiet():
        return as_array(xp_of(x).log(scaled) + x)


class LogBesselI0(_Unary):
    """log I0(x); the slope is I1(x) / I0(x)."""

    __slots__ = ()
    op_name = "log_bessel_i0"

    @staticmethod
    def compute(a: Any) -> Any:
        return _log_bessel_array(0, a)

    def slope(self, x: Any) -> Any:
        if isinstance(x, Tensor):
            return (LogBesselI1.apply(x) - LogBesselI0.apply(x)).exp()
        with quiet():
            return xp_of(x).exp(_log_bessel_array(1, x) - _log_bessel_array(0, x))


class LogBesselI1(_Unary):
    """log I1(x); the slope is I0(x) / I1(x) - 1 / x."""

    __slots__ = ()
    op_name = "log_bessel_i1"

    @staticmethod
    def compute(a: Any) -> Any:
        return _log_bessel_array(1, a)

    def slope(self, x: Any) -> Any:
        if isinstance(x, Tensor):
            return (LogBesselI0.apply(x) - LogBesselI1.apply(x)).exp() - x.reciprocal()
        with quiet():
            return xp_of(x).exp(_log_bessel_array(0, x) - _log_bessel_array(1, x)) - 1 / x


def log_bessel_i(input: Tensor, order: int) -> Tensor:
    """log I_order(input) of the modified Bessel function of the first kind, order 0 or 1."""
    require_tensor("log_bessel_i", input)
    return (LogBesselI0 if order == 0 else LogBesselI1).apply(input)


# ------------------------------------------------------------------ gamma draws
def _gamma_cdf_slope(concentration: Any, x: Any) -> Any:
    """dF/da of the regularised lower incomplete gamma F(a, x), in float64."""
    gammainc = _backend_special(concentration, "gammainc")
    step = 1e-3 * concentration

    def central(h: Any) -> Any:
        return (gammainc(concentration + h, x) - gammainc(concentration - h, x)) / (2 * h)

    return (4 * central(step / 2) - central(step)) / 3


def standard_gamma_grad_array(concentration: Any, x: Any) -> Any:
    """d x / d concentration of Gamma(concentration, 1) samples x, at fixed CDF value."""
    xp = xp_of(x)
    a = concentration.astype(np.float64)
    v = xp.maximum(x.astype(np.float64), np.finfo(np.float64).tiny)
    gammaln = _backend_special(a, "gammaln")
    with quiet():
        log_density = (a - 1) * xp.log(v) - v - gammaln(a)
        slope = -_gamma_cdf_slope(a, v) / xp.exp(log_density)
    slope = xp.where(xp.isfinite(slope), slope, 0.0)
    return slope.astype(x.dtype, copy=False)


class StandardGammaBackward0(Op):
    """Gamma(alpha, 1) samples with the implicit reparameterisation gradient for alpha."""

    __slots__ = ("_slope",)
    op_name = "_standard_gamma"

    def forward(self, alpha: Any, generator: Generator | None) -> Any:
        backend, state = device_state(generator, self.device)
        x = backend.random_gamma(state, alpha, alpha.dtype)
        xp = xp_of(x)
        x = xp.maximum(x, np.finfo(x.dtype).tiny)  # PyTorch clamps samples away from zero
        self._slope = standard_gamma_grad_array(alpha, x) if self.needs_input_grad[0] else None
        return as_array(x)

    def backward(self, g: Any) -> Any:
        slope = self._slope
        if isinstance(g, Tensor):
            slope = Tensor._wrap(slope, g.device)
        return g * slope


def _standard_gamma(alpha: Tensor, generator: Generator | None = None) -> Tensor:
    """Gamma(alpha, 1) samples, differentiable in alpha (PyTorch's `torch._standard_gamma`)."""
    require_tensor("_standard_gamma", alpha)
    require_floating(alpha, "gamma_cpu")
    return StandardGammaBackward0.apply(alpha, generator=generator)


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """d x / d alpha of Gamma(alpha, 1) samples `x` (PyTorch's `torch._standard_gamma_grad`)."""
    slope = standard_gamma_grad_array(data_of(alpha), data_of(x))
    return Tensor._wrap(slope, x.device)


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial samples: successes in `count` trials of probability `prob` (no gradient)."""
    require_tensor("binomial", count, "count")
    require_tensor("binomial", prob, "prob", 2)
    with launching(count.device, "binomial"):
        backend, state = device_state(generator, count.device)
        probs = xp_of(prob._data).clip(prob._data, 0.0, 1.0)
        out = backend.random_binomial(state, count._data, probs, prob.dtype)
    return Tensor._wrap(as_array(out), count.device)


# ------------------------------------------------------------------ functions
def _float_input(input: Any, name: str) -> None:
    require_tensor(name, input)


FUNCTIONS = {"binomial": binomial}

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "binomial"]
