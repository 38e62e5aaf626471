"""Helpers that backward rules call on either arrays or Tensors (the latter with create_graph=True).

Operators (`+ - * / ** @`, unary `-`) already work on both; these cover the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends import backends
from ..tensor import Tensor


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


def exp(x: Any) -> Any:
    """Elementwise exp."""
    return x.exp() if isinstance(x, Tensor) else xp_of(x).exp(x)


def log(x: Any) -> Any:
    """Elementwise natural log."""
    return x.log() if isinstance(x, Tensor) else xp_of(x).log(x)


def quiet() -> Any:
    """NumPy's errstate that lets x / 0, 0 / 0 and log(0) give inf and nan silently (as PyTorch).

    About a microsecond: for rules that can meet these (div, log, pow, sqrt), not for mul or add.
    """
    return np.errstate(divide="ignore", invalid="ignore")


# ------------------------------------------------------------------ values
def data_of(x: Any) -> Any:
    """The raw array of a Tensor (or the array itself): for masks and indices (no grad)."""
    return x._data if isinstance(x, Tensor) else x


def as_array(x: Any) -> Any:
    """A NumPy scalar (what NumPy returns for 0-d results) as a 0-d array; anything else as is."""
    return np.asarray(x) if isinstance(x, np.generic) else x


def zeros_like(x: Any) -> Any:
    """Zeros of `x`'s shape and dtype, on its device (a constant: no history)."""
    if isinstance(x, Tensor):
        return Tensor._wrap(xp_of(x._data).zeros(x.shape, x.dtype), x.device)
    return xp_of(x).zeros(x.shape, x.dtype)


# ------------------------------------------------------------------ shapes
def sum_dims(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Sum over `axis` (None: all)."""
    if isinstance(x, Tensor):
        return x.sum(dim=axis, keepdim=keepdims)
    return as_array(x.sum(axis=axis, keepdims=keepdims))


def reshape(x: Any, shape: tuple[int, ...]) -> Any:
    """`x` in a new shape."""
    return x.reshape(shape)


def expand(x: Any, shape: tuple[int, ...]) -> Any:
    """`x` broadcast to `shape`; arrays get a writable copy, as a gradient may become a `.grad`."""
    if isinstance(x, Tensor):
        return x.expand(shape)
    if x.shape == shape:
        return x
    out = xp_of(x).empty(shape, x.dtype)
    out[...] = x
    return out


def unsqueeze(x: Any, axis: int) -> Any:
    """`x` with a new axis of length 1 at `axis`."""
    if isinstance(x, Tensor):
        return x.unsqueeze(axis)
    return xp_of(x).expand_dims(x, axis)


def unsqueeze_dims(x: Any, axes: tuple[int, ...]) -> Any:
    """`x` with length-1 axes put back where a reduction without keepdim removed them."""
    if not axes:
        return x
    shape = list(x.shape)
    for axis in sorted(axes):
        shape.insert(axis, 1)
    return x.reshape(tuple(shape))


def squeeze(x: Any, axis: int) -> Any:
    """`x` without its length-1 axis `axis`."""
    if isinstance(x, Tensor):
        return x.squeeze(axis)
    return xp_of(x).squeeze(x, axis)


def swap_last(x: Any) -> Any:
    """`x` with its last two axes swapped (a matrix transpose for each batch)."""
    return x.transpose(-2, -1) if isinstance(x, Tensor) else x.swapaxes(-1, -2)


def permute(x: Any, axes: tuple[int, ...]) -> Any:
    """`x` with its axes reordered."""
    return x.permute(*axes) if isinstance(x, Tensor) else x.transpose(axes)


def getitem(x: Any, key: Any) -> Any:
    """`x[key]` for a normalised key (see `ops.indexing`)."""
    if isinstance(x, Tensor):
        from .indexing import IndexBackward0, SliceBackward0, is_basic  # noqa: PLC0415

        op = SliceBackward0 if is_basic(key) else IndexBackward0
        return op.apply(x, key=key)
    return as_array(x[key])


def concat(xs: Any, axis: int) -> Any:
    """Concatenate along `axis`."""
    if isinstance(xs[0], Tensor):
        from .shape import cat  # noqa: PLC0415

        return cat(list(xs), axis)
    return xp_of(xs[0]).concatenate(xs, axis)


# ------------------------------------------------------------ elementwise
def where(cond: Any, x: Any, y: Any) -> Any:
    """`x` where the constant mask `cond` holds, else `y` (either may be a scalar)."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        from .elementwise import WhereBackward0  # noqa: PLC0415

        return WhereBackward0.apply(data_of(cond), x, y)
    return xp_of(cond).where(cond, x, y)


def mul_const(x: Any, c: Any) -> Any:
    """`x * c` for a constant array `c` (a mask or weights) that takes no gradient."""
    if isinstance(x, Tensor):
        from .arithmetic import MulBackward0  # noqa: PLC0415

        return MulBackward0.apply(x, c)
    return x * c


def _unary(name: str, x: Any) -> Any:
    if isinstance(x, Tensor):
        return getattr(x, name)()
    return getattr(xp_of(x), name)(x)


def sqrt(x: Any) -> Any:
    """Elementwise square root."""
    return _unary("sqrt", x)


def sin(x: Any) -> Any:
    """Elementwise sine."""
    return _unary("sin", x)


def cos(x: Any) -> Any:
    """Elementwise cosine."""
    return _unary("cos", x)


def tanh(x: Any) -> Any:
    """Elementwise tanh."""
    return _unary("tanh", x)


def sign(x: Any) -> Any:
    """Elementwise sign as a constant (the derivative of |x| needs no gradient of its own)."""
    data = data_of(x)
    return xp_of(data).sign(data)
