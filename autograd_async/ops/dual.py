"""Helpers that backward rules call on either arrays or Tensors (the latter with create_graph=True).

Operators (`+ - * / ** @`, unary `-`) already work on both; these cover the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..devices import is_cupy_array
from ..tensor import Tensor


def xp_of(array: Any) -> Any:
    """The array module (numpy or cupy) of an array."""
    if is_cupy_array(array):
        import cupy  # noqa: PLC0415 - only reached with CuPy arrays

        return cupy
    return np


def sum_to(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum a broadcast gradient back to `shape` (the reverse of NumPy broadcasting)."""
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1
    )
    if isinstance(g, Tensor):
        out = g.sum(dim=axes, keepdim=True) if axes else g
        return out.reshape(shape)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    return out.reshape(shape)


def can_sum_to(gshape: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """True when a gradient of `gshape` is a broadcast of `shape` (so `sum_to` applies)."""
    if len(gshape) < len(shape):
        return False
    lead = len(gshape) - len(shape)
    return all(n == 1 or n == gshape[i + lead] for i, n in enumerate(shape))


def cast(g: Any, dtype: Any) -> Any:
    """`g` in `dtype` (a no-op when it already is)."""
    if g.dtype == dtype:
        return g
    if isinstance(g, Tensor):
        return g.to(dtype=dtype)
    return g.astype(dtype)


def exp(x: Any) -> Any:
    """Elementwise exp."""
    return x.exp() if isinstance(x, Tensor) else xp_of(x).exp(x)


def log(x: Any) -> Any:
    """Elementwise natural log."""
    return x.log() if isinstance(x, Tensor) else xp_of(x).log(x)
