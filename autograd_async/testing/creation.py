"""`make_tensor`: a tensor of random values for a test, with PyTorch's ranges and options."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.tensor import Tensor, as_dtype
from ..creation import empty, randint
from ..dtypes import of as dtype_of
from ..ops.complex_views import complex as make_complex

__all__ = ["make_tensor"]


def make_tensor(
    *shape: int | Sequence[int],
    dtype: Any,
    device: Any,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """A tensor of `shape` filled with values drawn uniformly from `[low, high)`.

    Defaults, as PyTorch's: bool `[0, 2)`, uint8 `[0, 10)`, other integers `[-9, 10)`, floating
    and complex types `[-9, 9)` (both parts of a complex value). Bounds outside the dtype's range
    are clamped to it. `noncontiguous` returns a strided view holding the same kind of values;
    `exclude_zero` replaces zeros by the smallest positive value of the type (1 for integers).
    """
    sizes = _shape_of(shape)
    np_dtype = as_dtype(dtype)
    if np_dtype is None:
        raise TypeError("make_tensor() needs a dtype")
    kind = np_dtype.kind
    if kind == "b":
        values = randint(0, 2, sizes, device=device).bool()
    elif kind in "iu":
        lo, hi = _bounds(low, high, np_dtype, integer=True)
        values = randint(lo, hi, sizes, dtype=dtype, device=device)
    else:
        part = _real_part(np_dtype)  # the dtype itself unless complex
        lo, hi = _bounds(low, high, part, integer=False)
        if kind == "c":
            real = empty(sizes, dtype=part, device=device).uniform_(lo, hi)
            imag = empty(sizes, dtype=part, device=device).uniform_(lo, hi)
            values = make_complex(real, imag)
        else:
            values = empty(sizes, dtype=dtype, device=device).uniform_(lo, hi)
    if noncontiguous and values.numel() > 1:
        values = values.repeat_interleave(2, dim=-1)[..., ::2]
    elif memory_format is not None:
        values = values.contiguous(memory_format=memory_format)
    if exclude_zero:
        replacement = 1 if kind in "biu" else float(np.finfo(_real_part(np_dtype)).tiny)
        values.masked_fill_(values == 0, replacement)
    if requires_grad:
        values.requires_grad_(True)
    return values


def _shape_of(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _real_part(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype_of(dtype).to_real())


def _bounds(
    low: float | None, high: float | None, dtype: np.dtype, *, integer: bool
) -> tuple[float, float]:
    """PyTorch's defaults, checks and clamping of `low` and `high` for one element type."""
    if integer:
        default_low, default_high = (0, 10) if dtype == np.uint8 else (-9, 10)
        info = np.iinfo(dtype)
        lowest, highest = float(info.min), float(info.max) + 1
    else:
        default_low, default_high = -9, 9
        finfo = np.finfo(dtype)
        lowest, highest = float(finfo.min), float(finfo.max)
    lo = default_low if low is None else low
    hi = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
    if lo == hi and not integer:
        raise ValueError(
            "Passing `low==high` to `torch.testing.make_tensor` for floating or complex types "
            "is not supported; pass `low` below `high`, or fill with `full` instead."
        )
    if lo >= hi:
        raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
    if hi < lowest or lo >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{lo}, {hi}), but "
            f"{dtype} only supports [{lowest}, {highest})"
        )
    lo, hi = max(lo, lowest), min(hi, highest)
    if integer:
        return math.ceil(lo), math.ceil(hi)
    return lo, hi
