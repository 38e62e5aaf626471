"""In-place `y += alpha * x` through BLAS axpy when SciPy is installed.

One pass over memory instead of NumPy's two (a temporary, then the add), and OpenBLAS spreads it
over its threads: on a 1024x1024 float32 weight, 0.2 ms against 0.65 ms. SciPy is optional; without
it, or for arrays BLAS cannot take in place, callers fall back to NumPy.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


@functools.cache
def _axpy_for(dtype: np.dtype) -> Any:
    try:
        from scipy.linalg import blas  # noqa: PLC0415 - optional, imported on first use
    except ImportError:
        return None
    return {np.dtype("float32"): blas.saxpy, np.dtype("float64"): blas.daxpy}.get(dtype)


def axpy_(y: Any, x: Any, alpha: float) -> bool:
    """`y += alpha * x` in place via BLAS; False (nothing done) when BLAS cannot do it in place."""
    if (
        type(y) is not np.ndarray
        or type(x) is not np.ndarray
        or y.dtype != x.dtype
        or y.shape != x.shape
        or not y.flags.c_contiguous
        or not y.flags.writeable
        or not x.flags.c_contiguous
    ):
        return False
    axpy = _axpy_for(y.dtype)
    if axpy is None:
        return False
    flat = y.reshape(-1)
    result = axpy(x.reshape(-1), flat, a=alpha)
    if result.ctypes.data != flat.ctypes.data:  # BLAS made a copy after all: write it back
        flat[...] = result
    return True
