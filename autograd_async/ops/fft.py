"""Discrete Fourier transforms as three ops, as PyTorch has them: complex to complex
(`FftC2CBackward0`), real to complex (`FftR2CBackward0`) and complex to real (`FftC2RBackward0`).

Each computes with the array's own `fft` module (NumPy's, or CuPy's for CuPy arrays) over `axes`,
at transform sizes `sizes` (inputs cropped or zero-padded first) with a normalization mode. A
transform is linear, so its gradient is its adjoint (PyTorch's conjugate convention): the
transform of the other direction with the dual normalization ("backward" <-> "forward"), then
the adjoint of the crop-or-pad back to the input's sizes. The one-sided spectra add two twists:
r2c pads the cotangent back to the full spectrum, c2r doubles the bins that stand for two.
Backward rules use only these ops, so gradients of gradients work (`create_graph=True`).
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from .complex_parts import real_of
from .dual import as_array, mul_const, xp_of
from .promotion import as_float

DUAL_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _complex_dtype(dtype: Any) -> Any:
    return {"float32": "complex64", "float64": "complex128"}.get(str(dtype), dtype)


def _real_dtype(dtype: Any) -> Any:
    return {"complex64": "float32", "complex128": "float64"}.get(str(dtype), dtype)


def resize_array(a: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
    """`a` cropped or zero-padded at the end of each axis to the given sizes."""
    for axis, size in zip(axes, sizes, strict=True):
        have = a.shape[axis]
        if have > size:
            a = a[(slice(None),) * axis + (slice(0, size),)]
        elif have < size:
            pad = [(0, 0)] * a.ndim
            pad[axis] = (0, size - have)
            a = xp_of(a).pad(a, pad)
    return a


class FftResizeBackward0(Op):
    """Crop or zero-pad along axes: the adjoint step between a transform and its input."""

    __slots__ = ("_axes", "_sizes")
    op_name = "fft_resize"

    def forward(self, a: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
        self._axes = axes
        self._sizes = tuple(a.shape[axis] for axis in axes)
        return as_array(resize_array(a, axes, sizes))

    def backward(self, g: Any) -> Any:
        return resize(g, self._axes, self._sizes)


def _run(cls: type[Op], x: Any, **params: Any) -> Any:
    """The op `cls` of a Tensor (recorded) or of an array (plain), for backward rules."""
    if isinstance(x, Tensor):
        return cls.apply(x, **params)
    return object.__new__(cls).forward(x, **params)


def resize(x: Any, axes: tuple[int, ...], sizes: tuple[int, ...]) -> Any:
    """Crop or zero-pad an array or a Tensor along `axes` to `sizes` (recorded for Tensors)."""
    if all(x.shape[axis] == size for axis, size in zip(axes, sizes, strict=True)):
        return x
    return _run(FftResizeBackward0, x, axes=axes, sizes=sizes)


class _Transform(Op):
    __slots__ = ("_axes", "_in_sizes", "_norm", "_forward")
    complex_conjugate_rule = True  # written with conjugate transposes

    def _remember(self, a: Any, axes: tuple[int, ...], norm: str, forward: bool) -> None:
        self._axes = axes
        self._in_sizes = tuple(a.shape[axis] for axis in axes)
        self._norm = norm
        self._forward = forward


class FftC2CBackward0(_Transform):
    """fftn (forward=True) or ifftn of a complex array."""

    __slots__ = ()

    def forward(self, a: Any, axes: tuple, sizes: tuple, norm: str, forward: bool) -> Any:
        self._remember(a, axes, norm, forward)
        fft = xp_of(a).fft
        out = (fft.fftn if forward else fft.ifftn)(a, s=sizes, axes=axes, norm=norm)
        return as_array(out.astype(a.dtype, copy=False))

    def backward(self, g: Any) -> Any:
        adjoint = c2c(g, self._axes, None, DUAL_NORM[self._norm], not self._forward)
        return resize(adjoint, self._axes, self._in_sizes)


class FftR2CBackward0(_Transform):
    """fftn or ifftn of a real array: the full spectrum, or its first half (`onesided`)."""

    __slots__ = ("_onesided", "_full")

    def forward(
        self, a: Any, axes: tuple, sizes: tuple, norm: str, forward: bool, onesided: bool
    ) -> Any:
        a = as_float(a)
        self._remember(a, axes, norm, forward)
        self._onesided = onesided
        self._full = sizes[-1]
        fft = xp_of(a).fft
        if onesided and forward:
            out = fft.rfftn(a, s=sizes, axes=axes, norm=norm)
        else:
            out = (fft.fftn if forward else fft.ifftn)(a, s=sizes, axes=axes, norm=norm)
            if onesided:
                out = resize_array(out, axes[-1:], (sizes[-1] // 2 + 1,))
        return as_array(out.astype(_complex_dtype(a.dtype), copy=False))

    def backward(self, g: Any) -> Any:
        if self._onesided:
            g = resize(g, self._axes[-1:], (self._full,))
        adjoint = c2c(g, self._axes, None, DUAL_NORM[self._norm], not self._forward)
        return real_of(resize(adjoint, self._axes, self._in_sizes))


class FftC2RBackward0(_Transform):
    """irfftn: the real signal of sizes `sizes` whose one-sided spectrum is the input."""

    __slots__ = ("_real_input",)

    def forward(self, a: Any, axes: tuple, sizes: tuple, norm: str) -> Any:
        self._real_input = a.dtype.kind != "c"
        if self._real_input:
            a = as_float(a).astype(_complex_dtype(as_float(a).dtype))
        self._remember(a, axes, norm, False)
        out = xp_of(a).fft.irfftn(a, s=sizes, axes=axes, norm=norm)
        return as_array(out.astype(_real_dtype(a.dtype), copy=False))

    def backward(self, g: Any) -> Any:
        axes = self._axes
        n = g.shape[axes[-1]]
        half = r2c(g, axes, tuple(g.shape[axis] for axis in axes), DUAL_NORM[self._norm])
        kept = half.shape[axes[-1]]
        if n - kept > 0:  # bins 1 .. n - kept stand for themselves and their mirror images
            xp = xp_of(half._data if isinstance(half, Tensor) else half)
            weights = xp.ones(kept, dtype=_real_dtype(half.dtype))
            weights[1 : 1 + n - kept] = 2
            shape = [1] * half.ndim
            shape[axes[-1]] = kept
            half = mul_const(half, weights.reshape(shape))
        grad = resize(half, axes, self._in_sizes)
        return real_of(grad) if self._real_input else grad


def c2c(x: Any, axes: tuple, sizes: Any, norm: str, forward: bool) -> Any:
    """fftn or ifftn of an array or a Tensor (recorded for Tensors)."""
    if sizes is None:
        sizes = tuple(x.shape[axis] for axis in axes)
    if x.dtype.kind != "c":
        return _run(
            FftR2CBackward0, x, axes=axes, sizes=sizes, norm=norm, forward=forward, onesided=False
        )
    return _run(FftC2CBackward0, x, axes=axes, sizes=sizes, norm=norm, forward=forward)


def r2c(x: Any, axes: tuple, sizes: tuple, norm: str) -> Any:
    """rfftn of a real array or Tensor (recorded for Tensors)."""
    return _run(FftR2CBackward0, x, axes=axes, sizes=sizes, norm=norm, forward=True, onesided=True)


def c2r(x: Any, axes: tuple, sizes: tuple, norm: str) -> Any:
    """irfftn of an array or a Tensor (recorded for Tensors)."""
    return _run(FftC2RBackward0, x, axes=axes, sizes=sizes, norm=norm)
