"""`finfo` and `iinfo`: the numeric limits of an element type, with PyTorch's fields and text.

Values are Python floats and ints read from NumPy (and ml-dtypes for bfloat16), so expressions such
as `x.clamp(min=aa.finfo(x.dtype).eps)` behave as with PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dtypes import bfloat16, default_float
from .dtypes import of as dtype_of

__all__ = ["finfo", "iinfo"]


def _np_dtype(dtype: Any) -> np.dtype:
    return np.dtype(dtype_of(np.dtype(dtype)))


class finfo:  # noqa: N801 - PyTorch's name
    """Limits of a floating type (complex types: of their real part); default: the default float."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, dtype: Any = None) -> None:
        np_type = default_float() if dtype is None else _np_dtype(dtype)
        np_type = np.dtype(dtype_of(np_type).to_real())
        if np_type.kind not in "fV":
            raise TypeError(
                "finfo() requires a floating point input type. Use iinfo to handle 'finfo'"
            )
        if np_type == np.dtype(bfloat16):
            import ml_dtypes  # the bfloat16 type comes from it, so it is installed

            info: Any = ml_dtypes.finfo(bfloat16)
        else:
            info = np.finfo(np_type)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # Decimal digits of precision as a power of ten (bfloat16's: 0.01, as PyTorch's).
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = str(dtype_of(np_type))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """Limits of an integer type."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, dtype: Any) -> None:
        np_type = _np_dtype(dtype)
        if np_type.kind == "b":
            raise TypeError("bool is not supported by iinfo")
        if np_type.kind in "iu":
            info = np.iinfo(np_type)
            self.bits, self.min, self.max = int(info.bits), int(info.min), int(info.max)
        else:
            raise TypeError("iinfo() requires an integer input type. Use finfo to handle 'iinfo'")
        self.dtype = str(dtype_of(np_type))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
