"""Indexing: `tensor[key]` with ints, slices, None, Ellipsis, boolean masks and integer arrays.

Basic keys (ints, slices, None, Ellipsis) give views (`SelectBackward0`, `SliceBackward0`); keys
with arrays give copies (`IndexBackward0`). Backward scatters the gradient into zeros of the input's
shape, accumulating at repeated indices (`np.add.at`).
"""

from __future__ import annotations

from types import EllipsisType
from typing import Any

import numpy as np

from ..batching import batchable
from ..core.op import Op
from ..core.tensor import Tensor
from ..devices import Device, backend_for, backend_of
from .dual import as_array, getitem, xp_of

_BASIC = (int, slice, type(None), EllipsisType)


def is_basic(key: tuple) -> bool:
    """True when the key selects a view: only ints, slices, None and Ellipsis."""
    return all(isinstance(k, _BASIC) and not isinstance(k, bool) for k in key)


def _has_int_arrays(key: tuple) -> bool:
    return any(getattr(k, "dtype", None) is not None and k.dtype.kind in "iu" for k in key)


def normalize_key(key: Any, data: Any, device: Device) -> tuple:
    """A tuple key of ints, slices, None, Ellipsis and arrays on `data`'s backend (on `device`),
    its integer arrays checked against the dims they index."""
    if (
        isinstance(key, list)
        and len(key) < 32
        and any(
            isinstance(k, (list, tuple, slice, Tensor, np.ndarray, EllipsisType)) or k is None
            for k in key
        )
    ):
        key = tuple(key)  # NumPy's old rule, kept by PyTorch: such a list is a tuple of indices
    if not isinstance(key, tuple):
        key = (key,)
    xp = xp_of(data)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
            if k.ndim == 0 and k.dtype.kind in "iu":
                k = int(k)
            elif xp is not np:
                k = xp.asarray(k)
        elif isinstance(k, (list, tuple, np.ndarray)) or (xp is not np and hasattr(k, "dtype")):
            k = xp.asarray(k)
            if k.dtype.kind == "f" and k.size == 0:
                k = k.astype(np.int64)  # `x[[]]` selects nothing
        elif isinstance(k, np.generic):
            k = k.item()
        elif not isinstance(k, (*_BASIC, bool)):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                f"are valid indices (got {type(k).__name__})"
            )
        if getattr(k, "dtype", None) is not None and k.dtype.kind not in "iub":
            raise IndexError(
                f"tensors used as indices must be long, int, byte or bool tensors, got {k.dtype}"
            )
        out.append(k)
    key = tuple(out)
    backend = backend_for(device)
    if not backend.indexing_checks_bounds:  # CuPy wraps out-of-range indices around: refuse
        check_key_bounds(backend, key, data.shape)
    return key


def split_selects(key: tuple) -> tuple[tuple, tuple] | None:
    """PyTorch applies a key's integers first, as selects, so that they never join the index
    arrays (NumPy's rule would move the indexed dims to the front in `x[1, :, idx]`): the
    selects and the rest of the key, or None when both rules agree."""
    ints = [isinstance(k, int) and not isinstance(k, bool) for k in key]
    arrays = [getattr(k, "dtype", None) is not None for k in key]
    if not any(ints) or not any(arrays):
        return None
    selects: list[Any] = []  # ints, None, Ellipsis and full slices
    rest: list[Any] = []
    for k, is_int in zip(key, ints):
        if is_int:
            selects.append(k)
        elif k is None:
            selects.append(None)
            rest.append(slice(None))
        elif k is Ellipsis:
            selects.append(k)
            rest.append(k)
        else:
            selects.extend([slice(None)] * _dims_taken(k))
            rest.append(k)
    return tuple(selects), tuple(rest)


def check_key_bounds(backend: Any, key: tuple, shape: tuple[int, ...]) -> None:
    """IndexError for an integer index array of `key` outside its dimension (as NumPy raises)."""
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - sum(_dims_taken(k) for k in key if k is not Ellipsis)
            continue
        if getattr(k, "dtype", None) is not None and k.dtype.kind in "iu" and dim < len(shape):
            backend.check_indices(k, shape[dim], dim, "index")
        dim += _dims_taken(k)


def _dims_taken(k: Any) -> int:
    """How many dims of the indexed array one key entry consumes."""
    if k is None or isinstance(k, bool):
        return 0  # a new axis
    if getattr(k, "dtype", None) == np.bool_:
        return k.ndim  # a mask covers as many dims as it has
    return 1


def scatter_into_zeros(g: Any, key: tuple, shape: tuple[int, ...], accumulate: bool) -> Any:
    """Zeros of `shape` with `g` added at `key` (repeated indices accumulate)."""
    out = xp_of(g).zeros(shape, g.dtype)
    if not accumulate:
        out[key] = g
    else:
        backend_of(out).scatter_add(out, key, g)
    return out


class _IndexBase(Op):
    __slots__ = ("_key", "_shape")
    op_name = "index"

    def forward(self, a: Any, key: tuple) -> Any:
        self._key = key
        self._shape = a.shape
        return as_array(a[key])

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return IndexAccumulateBackward0.apply(g, key=self._key, shape=self._shape)
        return scatter_into_zeros(g, self._key, self._shape, _has_int_arrays(self._key))


class SelectBackward0(_IndexBase):
    __slots__ = ()
    op_name = "select"
    is_view = True

    def forward(self, a: Any, key: tuple) -> Any:
        # A trailing Ellipsis makes NumPy return a 0-d view instead of a scalar copy.
        if Ellipsis not in key:
            key = (*key, Ellipsis)
        return super().forward(a, key)


class SliceBackward0(SelectBackward0):
    __slots__ = ()
    op_name = "slice"


class IndexBackward0(_IndexBase):
    __slots__ = ()
    saved_slots = ("_key",)  # its index arrays: PyTorch saves them as tensors

    def backward(self, g: Any) -> Any:
        self.check_released()
        return super().backward(g)


class IndexAccumulateBackward0(Op):
    """Zeros with `g` added at `key`: the backward of indexing, differentiable for create_graph."""

    __slots__ = ("_key",)
    op_name = "index_put"

    def forward(self, g: Any, key: tuple, shape: tuple[int, ...]) -> Any:
        self._key = key
        return scatter_into_zeros(g, key, shape, _has_int_arrays(key))

    def backward(self, gg: Any) -> Any:
        return getitem(gg, self._key)


@batchable
def index(input: Tensor, key: Any) -> Tensor:
    """`input[key]`: a view for basic keys, a copy for masks and integer arrays."""
    key = normalize_key(key, input._data, input.device)
    split = split_selects(key)
    if split is not None:
        selects, key = split
        input = SelectBackward0.apply(input, key=selects)
    if is_basic(key):
        op = SelectBackward0 if all(isinstance(k, int) for k in key) else SliceBackward0
        return op.apply(input, key=key)
    return IndexBackward0.apply(input, key=key)


METHODS = {"__getitem__": index}
