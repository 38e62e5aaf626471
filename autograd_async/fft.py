"""torch.fft's functions: fft, ifft, rfft, irfft, hfft, ihfft and their 2-d and n-d forms,
fftfreq, rfftfreq, fftshift and ifftshift, with PyTorch's arguments (`n`/`s`, `dim`, `norm`),
dtypes and errors. The math and the gradients are the three transform ops of `ops.fft`.
"""

from __future__ import annotations

from typing import Any

from .core.op import require_tensor, torch_type_name
from .core.tensor import Tensor
from .creation import tensor as _tensor
from .dtypes import get_default_dtype
from .ops.complex_parts import conj_of
from .ops.fft import DUAL_NORM, c2c, c2r, r2c
from .ops.rearrange import roll
from .ops.reduction import normalize_dim

_NORMS = ("backward", "forward", "ortho")


def _norm(norm: str | None) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _checked(name: str, input: Any) -> None:
    require_tensor(name, input)
    if input.dtype.kind == "f" and input.dtype.itemsize < 4:
        raise RuntimeError(f"Unsupported dtype {torch_type_name(input.dtype)}")


def _size(n: int | None, name: str) -> None:
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _axes_and_sizes(
    input: Tensor, s: Any, dim: Any, default_all: bool
) -> tuple[tuple[int, ...], list[int | None]]:
    """The transform's axes and requested sizes (None: the input's), as PyTorch resolves them."""
    ndim = input.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = [int(n) for n in s]
        if dim is None:
            if len(s) > ndim:
                raise RuntimeError(
                    f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions."
                )
            dim = tuple(range(ndim - len(s), ndim))
        elif len(s) != len(dim):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif dim is None:
        dim = tuple(range(ndim)) if default_all else (ndim - 2, ndim - 1)
    axes = tuple(normalize_dim(d, ndim) for d in dim)
    if len(set(axes)) != len(axes):
        raise RuntimeError("FFT dims must be unique")
    sizes = list(s) if s is not None else [None] * len(axes)
    for n in sizes:
        if n is not None and n != -1:
            _size(n, "")
    sizes = [None if n == -1 else n for n in sizes]
    return axes, sizes


def _c2c_n(
    name: str, input: Tensor, s: Any, dim: Any, norm: Any, forward: bool, default_all: bool = True
) -> Tensor:
    _checked(name, input)
    axes, sizes = _axes_and_sizes(input, s, dim, default_all)
    full = tuple(input.shape[a] if n is None else n for a, n in zip(axes, sizes, strict=True))
    return c2c(input, axes, full, _norm(norm), forward)


def _r2c_n(
    name: str, input: Tensor, s: Any, dim: Any, norm: Any, default_all: bool = True
) -> Tensor:
    _checked(name, input)
    if input.dtype.kind == "c":
        raise RuntimeError(
            f"{name} expects a real input tensor, but got {torch_type_name(input.dtype)}"
        )
    axes, sizes = _axes_and_sizes(input, s, dim, default_all)
    full = tuple(input.shape[a] if n is None else n for a, n in zip(axes, sizes, strict=True))
    return r2c(input, axes, full, _norm(norm))


def _c2r_n(
    name: str, input: Tensor, s: Any, dim: Any, norm: Any, default_all: bool = True
) -> Tensor:
    _checked(name, input)
    axes, sizes = _axes_and_sizes(input, s, dim, default_all)
    full = [input.shape[a] if n is None else n for a, n in zip(axes, sizes, strict=True)]
    if sizes[-1] is None:
        full[-1] = 2 * (input.shape[axes[-1]] - 1)
    if full[-1] < 1:
        raise RuntimeError(f"Invalid number of data points ({full[-1]}) specified")
    return c2r(input, axes, tuple(full), _norm(norm))


def _one(n: int | None) -> list | None:
    return None if n is None else [n]


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform along `dim`."""
    return _c2c_n("fft", input, _one(n), (dim,), norm, True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of `fft`."""
    return _c2c_n("ifft", input, _one(n), (dim,), norm, False)


def fft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """The two-dimensional discrete Fourier transform."""
    return _c2c_n("fft2", input, s, dim, norm, True)


def ifft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of `fft2`."""
    return _c2c_n("ifft2", input, s, dim, norm, False)


def fftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The n-dimensional discrete Fourier transform (over every dim by default)."""
    return _c2c_n("fftn", input, s, dim, norm, True)


def ifftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of `fftn`."""
    return _c2c_n("ifftn", input, s, dim, norm, False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-sided Fourier transform of a real signal (n // 2 + 1 bins)."""
    return _r2c_n("rfft", input, _one(n), (dim,), norm)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of `rfft`: a real signal of length n (2 * (bins - 1) by default)."""
    return _c2r_n("irfft", input, _one(n), (dim,), norm)


def rfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """The two-dimensional `rfftn`."""
    return _r2c_n("rfft2", input, s, dim, norm)


def irfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of `rfft2`."""
    return _c2r_n("irfft2", input, s, dim, norm)


def rfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The n-dimensional Fourier transform of a real signal, one-sided in the last dim."""
    return _r2c_n("rfftn", input, s, dim, norm)


def irfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of `rfftn`."""
    return _c2r_n("irfftn", input, s, dim, norm)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The real spectrum of a signal with Hermitian symmetry, from its first half."""
    _checked("hfft", input)
    return _c2r_n("hfft", conj_of(input), _one(n), (dim,), DUAL_NORM[_norm(norm)])


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of `hfft`: the first half of the Hermitian spectrum of a real signal."""
    _checked("ihfft", input)
    if input.dtype.kind == "c":
        raise RuntimeError(
            f"ihfft expects a real input tensor, but got {torch_type_name(input.dtype)}"
        )
    return conj_of(_r2c_n("ihfft", input, _one(n), (dim,), DUAL_NORM[_norm(norm)]))


def fftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """The sample frequencies of an n-point `fft`, for sample spacing `d`."""
    import numpy as np  # noqa: PLC0415 - the frequencies are made on the host, then moved

    values = np.fft.fftfreq(n, d)
    return _tensor(
        values, dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad
    )


def rfftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """The sample frequencies of an n-point `rfft`, for sample spacing `d`."""
    import numpy as np  # noqa: PLC0415

    values = np.fft.rfftfreq(n, d)
    return _tensor(
        values, dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad
    )


def _shift(name: str, input: Tensor, dim: Any, sign: int) -> Tensor:
    require_tensor(name, input)
    if dim is None:
        dim = tuple(range(input.ndim))
    elif isinstance(dim, int):
        dim = (dim,)
    dims = tuple(normalize_dim(d, input.ndim) for d in dim)
    if not dims:
        return input
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Move the zero-frequency term to the centre of the spectrum along `dim` (every dim)."""
    return _shift("fftshift", input, dim, 1)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of `fftshift`."""
    return _shift("ifftshift", input, dim, -1)


def hfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """The two-dimensional `hfftn`."""
    _checked("hfft2", input)
    return _c2r_n("hfft2", conj_of(input), s, dim, DUAL_NORM[_norm(norm)])


def hfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The real n-dimensional spectrum of a signal with Hermitian symmetry in the last dim,
    from its first half there (2 * (size - 1) points by default)."""
    _checked("hfftn", input)
    return _c2r_n("hfftn", conj_of(input), s, dim, DUAL_NORM[_norm(norm)])


def ihfft2(input: Tensor, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Tensor:
    """The two-dimensional `ihfftn`."""
    return _ihfft_n("ihfft2", input, s, dim, norm)


def ihfftn(input: Tensor, s: Any = None, dim: Any = None, norm: str | None = None) -> Tensor:
    """The inverse of `hfftn`: the one-sided (last dim) Hermitian spectrum of a real signal."""
    return _ihfft_n("ihfftn", input, s, dim, norm)


def _ihfft_n(name: str, input: Tensor, s: Any, dim: Any, norm: str | None) -> Tensor:
    _checked(name, input)
    if input.dtype.kind == "c":
        raise RuntimeError(
            f"{name} expects a real input tensor, but got {torch_type_name(input.dtype)}"
        )
    return conj_of(_r2c_n(name, input, s, dim, DUAL_NORM[_norm(norm)]))


__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
    "irfftn", "hfft", "ihfft", "hfft2", "hfftn", "ihfft2", "ihfftn", "fftfreq", "rfftfreq",
    "fftshift", "ifftshift",
]  # fmt: skip
