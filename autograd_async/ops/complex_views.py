"""Complex tensors built from real ones and seen as real ones: complex, polar, angle,
view_as_real, view_as_complex.

`view_as_real` and `view_as_complex` are views: they share the input's memory (and version
counter), as PyTorch's do, and their gradients pass the same numbers between the complex and
the real form (PyTorch's `ViewAsRealBackward0`/`ViewAsComplexBackward0`). Every rule here is
written in PyTorch's convention for complex gradients (the conjugate Wirtinger derivative).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from ..dtypes import default_float
from .dual import as_array, data_of, xp_of
from .elementwise import where
from .views import element_offset, element_strides

_COMPLEX_OF = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}


def _complex_dtype(dtype: Any) -> Any:
    """The complex dtype whose parts are `dtype` (half has none: NumPy lacks complex32)."""
    try:
        return _COMPLEX_OF[np.dtype(dtype)]
    except KeyError:
        raise RuntimeError(
            "complex32 (complex half) is not supported: NumPy has no complex dtype with half "
            "precision parts; cast to float32 first"
        ) from None


# ------------------------------------------------------------------ array forms
def real_view(a: Any) -> Any:
    """A complex array's memory as reals, with a trailing dimension of 2 (a view)."""
    xp = xp_of(a)
    parts = a.real  # a view starting where `a` starts, in the part dtype
    return xp.lib.stride_tricks.as_strided(
        parts, shape=a.shape + (2,), strides=a.strides + (parts.itemsize,)
    )


def complex_view(a: Any) -> Any:
    """A real array with a contiguous trailing dimension of 2 as complex numbers (a view)."""
    dtype = _complex_dtype(a.dtype)
    xp = xp_of(a)
    if xp is np:
        return a.view(dtype)[..., 0]
    return xp.ndarray(a.shape[:-1], dtype, memptr=a.data, strides=a.strides[:-1])


def pack_complex(re: Any, im: Any) -> Any:
    """A new complex array from real and imaginary parts (broadcast)."""
    xp = xp_of(re)
    shape = np.broadcast_shapes(re.shape, im.shape)
    out = xp.empty(shape, _complex_dtype(re.dtype))
    out.real[...] = re
    out.imag[...] = im
    return out


# ------------------------------------------------------------------------- ops
class ViewAsRealBackward0(Op):
    __slots__ = ()
    op_name = "view_as_real"
    is_view = True
    complex_conjugate_rule = True

    def forward(self, a: Any) -> Any:
        return real_view(a)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return complex(g.select(-1, 0), g.select(-1, 1))
        return pack_complex(g[..., 0], g[..., 1])


class ViewAsComplexBackward0(Op):
    __slots__ = ()
    op_name = "view_as_complex"
    is_view = True
    complex_conjugate_rule = True

    def forward(self, a: Any) -> Any:
        return complex_view(a)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return view_as_real(g)
        return real_view(g).copy()


class ComplexBackward0(Op):
    __slots__ = ()
    op_name = "complex"
    complex_conjugate_rule = True

    def forward(self, re: Any, im: Any) -> Any:
        return pack_complex(re, im)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return g.real, g.imag
        return as_array(g.real.copy()), as_array(g.imag.copy())


class PolarBackward0(Op):
    """abs * exp(i angle); backward as PyTorch's `polar_backward` (no gradient to abs where
    the result is 0)."""

    __slots__ = ()
    op_name = "polar"
    saves_output = True
    complex_conjugate_rule = True

    def forward(self, r: Any, theta: Any) -> Any:
        xp = xp_of(r)
        return pack_complex(r * xp.cos(theta), r * xp.sin(theta))

    def backward(self, g: Any) -> Any:
        (result,) = self.saved(g)
        if isinstance(g, Tensor):
            grad_conj = g.conj()
            return (grad_conj * result.sgn()).real, (grad_conj * result * 1j).real
        xp = xp_of(g)
        size = xp.abs(result)
        with np.errstate(divide="ignore", invalid="ignore"):
            sgn = xp.where(size == 0, 0, result / xp.where(size == 0, 1, size))
        grad_conj = xp.conj(g)
        return as_array((grad_conj * sgn).real), as_array((grad_conj * result * 1j).real)


class AngleBackward0(Op):
    """The argument of each element; real inputs give 0, or pi where negative (NaN stays)."""

    __slots__ = ()
    op_name = "angle"
    saved_inputs = (0,)
    complex_conjugate_rule = True

    def forward(self, a: Any) -> Any:
        xp = xp_of(a)
        if a.dtype.kind == "c":
            return as_array(xp.angle(a))
        values = a if a.dtype.kind == "f" else a.astype(default_float())
        out = xp.where(values < 0, values.dtype.type(math.pi), values.dtype.type(0))
        return as_array(xp.where(xp.isnan(values), values, out))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        if a.dtype.kind != "c":
            return g * 0
        if isinstance(g, Tensor):
            return where(a == 0, 0, g * a / a.abs().pow(2) * 1j)
        xp = xp_of(g)
        size2 = xp.abs(a) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = g * a / size2 * 1j
        return as_array(xp.where(a == 0, 0, grad).astype(a.dtype))


# -------------------------------------------------------------------- functions
def _require_floating_pair(real: Tensor, imag: Tensor) -> None:
    kinds = (real.dtype.kind, imag.dtype.kind)
    if kinds != ("f", "f"):
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{torch_type_name(real.dtype)} and {torch_type_name(imag.dtype)}"
        )
    if real.dtype != imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {torch_type_name(real.dtype)} but got scalar type "
            f"{torch_type_name(imag.dtype)} for second argument"
        )
    _complex_dtype(real.dtype)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """`real + 1j * imag` as a complex tensor (float32 parts give complex64, float64
    complex128); the parts broadcast."""
    require_tensor("complex", real, "real")
    require_tensor("complex", imag, "imag", 2)
    _require_floating_pair(real, imag)
    return ComplexBackward0.apply(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor `abs * (cos(angle) + 1j * sin(angle))`."""
    require_tensor("polar", abs, "abs")
    require_tensor("polar", angle, "angle", 2)
    _require_floating_pair(abs, angle)
    return PolarBackward0.apply(abs, angle)


def angle(input: Tensor) -> Tensor:
    """The argument of each element, in radians: for real inputs 0, or pi where negative;
    integer and bool inputs give the default float dtype."""
    require_tensor("angle", input)
    return AngleBackward0.apply(input)


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor's memory as a real one with a trailing dimension of 2 (real, imag)."""
    require_tensor("view_as_real", input)
    if input.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsRealBackward0.apply(input)


def view_as_complex(input: Tensor) -> Tensor:
    """A real tensor whose last dimension is 2 (contiguous) seen as complex numbers."""
    require_tensor("view_as_complex", input)
    if input.dtype not in (np.float16, np.float32, np.float64):
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {torch_type_name(input.dtype)}"
        )
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    data = data_of(input)
    strides = element_strides(data)
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    base = input._base
    if base is not None and element_offset(data, data_of(base)) % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    _complex_dtype(input.dtype)
    return ViewAsComplexBackward0.apply(input)


FUNCTIONS = {
    "complex": complex,
    "polar": polar,
    "angle": angle,
    "view_as_real": view_as_real,
    "view_as_complex": view_as_complex,
}
NOT_METHODS = ("complex", "polar", "view_as_real", "view_as_complex")
