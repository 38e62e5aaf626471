"""The parts of a complex tensor: real, imag, conj, with PyTorch's gradients.

Gradients of complex tensors follow PyTorch's convention (the conjugate Wirtinger derivative):
the gradient of `real(z)` is the real cotangent itself, that of `imag(z)` is `1j` times it, and
`conj` conjugates the cotangent.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .dual import as_array, mul_const, xp_of


def as_complex(g: Any, dtype: Any) -> Any:
    """A real gradient (array or Tensor) in the complex dtype `dtype`."""
    if isinstance(g, Tensor):
        return g.to(dtype=dtype)
    return g.astype(dtype)


class RealBackward0(Op):
    __slots__ = ("_dtype",)

    def forward(self, a: Any) -> Any:
        self._dtype = a.dtype
        return as_array(xp_of(a).real(a).copy())

    def backward(self, g: Any) -> Any:
        return as_complex(g, self._dtype)


class ImagBackward0(Op):
    __slots__ = ("_dtype",)

    def forward(self, a: Any) -> Any:
        self._dtype = a.dtype
        return as_array(xp_of(a).imag(a).copy())

    def backward(self, g: Any) -> Any:
        return mul_const(as_complex(g, self._dtype), 1j)


class ConjBackward0(Op):
    __slots__ = ()

    def forward(self, a: Any) -> Any:
        return as_array(xp_of(a).conj(a))

    def backward(self, g: Any) -> Any:
        return conj_of(g)


def conj_of(x: Any) -> Any:
    """The complex conjugate of an array or a Tensor (recorded for Tensors)."""
    if isinstance(x, Tensor):
        return ConjBackward0.apply(x) if x.dtype.kind == "c" else x
    return xp_of(x).conj(x) if x.dtype.kind == "c" else x


# Complex rules conjugate Tensors on the graph: this layer fills the hook the core leaves.
Op.conjugate = staticmethod(conj_of)  # type: ignore[method-assign]  # a hook, meant to be set


def real_of(x: Any) -> Any:
    """The real part of an array or a Tensor (recorded for Tensors)."""
    if isinstance(x, Tensor):
        return RealBackward0.apply(x) if x.dtype.kind == "c" else x
    return as_array(xp_of(x).real(x)) if x.dtype.kind == "c" else x


def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor (the tensor itself when it is real)."""
    require_tensor("real", input)
    return real_of(input)


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor (an error for real ones, as PyTorch)."""
    require_tensor("imag", input)
    if input.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return ImagBackward0.apply(input)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate (the tensor itself when it is real)."""
    require_tensor("conj", input)
    return conj_of(input)


FUNCTIONS = {"real": real, "imag": imag, "conj": conj, "conj_physical": conj}
METHODS = {"real": property(real), "imag": property(imag)}
