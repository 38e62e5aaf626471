"""torch.special's orthogonal polynomials (Chebyshev T U V W and their shifted forms, Hermite H
and He, Laguerre L, Legendre P) of degree n, by their three-term recurrences, elementwise in n.

PyTorch computes them without a gradient; so do these (the inputs are detached).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .dual import as_array, quiet, xp_of
from .pointwise import _float_pair
from .promotion import scalar


def _recurrence(x: Any, n: Any, first: Any, step: Any) -> Any:
    """P_n(x) by a three-term recurrence, elementwise in n: P_0 = 1, P_1 = first(x),
    P_{k+1} = step(k, x, P_k, P_{k-1}); P_n = 0 for n < 0, as PyTorch."""
    xp = xp_of(x)
    n, x = xp.broadcast_arrays(n, x)
    previous, current = xp.ones_like(x), first(x)
    out = xp.where(n == 0, previous, 0).astype(x.dtype)
    out = xp.where(n == 1, current, out)
    top = int(n.max()) if n.size else 0
    for k in range(1, top):
        previous, current = current, step(k, x, current, previous)
        out = xp.where(n == k + 1, current, out)
    return out


_POLYNOMIALS: dict[str, Any] = {
    "chebyshev_polynomial_t": (lambda x: x, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_u": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, lambda k, x, p, q: 2 * x * p - q),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": (
        lambda x: 1 - x,
        lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1),
    ),
    "legendre_polynomial_p": (
        lambda x: x,
        lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1),
    ),
}


class _Polynomial(Op):
    __slots__ = ()
    family: ClassVar[str] = ""
    shifted: ClassVar[bool] = False

    def forward(self, x: Any, n: Any) -> Any:
        x, n = _float_pair(x, n)
        xp = xp_of(x if hasattr(x, "dtype") else n)
        dtype = x.dtype if hasattr(x, "dtype") else n.dtype
        x = xp.asarray(x, dtype=dtype)
        degree = xp.trunc(xp.asarray(n)).astype("int64")
        if self.shifted:
            x = 2 * x - 1
        first, step = _POLYNOMIALS[self.family]
        with quiet():
            return as_array(_recurrence(x, degree, first, step).astype(dtype, copy=False))


def _polynomial_op(family: str, shifted: bool = False) -> type[_Polynomial]:
    name = "".join(w.title() for w in (("shifted_" if shifted else "") + family).split("_"))
    return type(name, (_Polynomial,), {"__slots__": (), "family": family, "shifted": shifted})


def _polynomial_function(cls: type[Op], name: str) -> Any:
    def fn(input: Any, n: Any) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            require_tensor(name, input)
        detach = [v.detach() if isinstance(v, Tensor) else scalar(v) for v in (input, n)]
        return cls.apply(*detach)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"PyTorch's {name.replace('_', ' ')} of degree n at input (no gradient)."
    return fn


POLYNOMIALS: dict[str, Any] = {
    name: _polynomial_function(_polynomial_op(name), name) for name in _POLYNOMIALS
}
POLYNOMIALS.update(
    {
        f"shifted_{name}": _polynomial_function(_polynomial_op(name, True), f"shifted_{name}")
        for name in _POLYNOMIALS
        if name.startswith("chebyshev")
    }
)
