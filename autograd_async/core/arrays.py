"""Array helpers shared by the graph's bookkeeping and the ops' backward rules: they take NumPy or
CuPy arrays, or Tensors when a backward is differentiable (create_graph=True).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import backends
from .tensor import Tensor


def xp_of(array: Any) -> Any:
    """The array module (numpy or cupy) of an array, as its backend says."""
    if type(array) is np.ndarray:  # most calls: no registry lookup
        return np
    try:
        return backends.of_array(array).xp
    except TypeError:  # Python scalars and other non-arrays combine with NumPy
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
    if g.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        g = g.real  # a real input's gradient is the real part of a complex one, as PyTorch's
    if isinstance(g, Tensor):
        return g.to(dtype=dtype)
    return g.astype(dtype)
