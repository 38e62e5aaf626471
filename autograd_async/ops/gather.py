"""Gathering and scattering along a dimension: gather, take_along_dim, index_select,
masked_select (copies that read), scatter, scatter_add, index_add, index_copy, masked_fill (copies
that write) and their in-place forms, and nonzero.

Each read is indexing with a key of index arrays (`GatherBackward0` is an `IndexBackward0` whose
key is the index tensor plus `arange` grids for the other dims), so its backward accumulates at
repeated indices like `x[idx]`. Each write is `_Put`: a copy of the input with the source written
(or added) at such a key; its backward routes the gradient at the key to the source. Indices are
checked for dtype, shape and range before any work, with errors that name the op.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..batching import batchable
from ..core.op import Op, describe, require_tensor
from ..core.tensor import Tensor
from ..devices import DeviceError, backend_of
from .dual import getitem, mul_const, sum_dims, where, xp_of
from .indexing import IndexAccumulateBackward0, IndexBackward0
from .inplace import _check_shape, _through_copy
from .reduction import normalize_dim


def add_at(out: Any, key: tuple, value: Any) -> None:
    """`out[key] += value`, accumulating at repeated indices."""
    backend_of(out).scatter_add(out, key, value)


def grid_key(index: Any, dim: int) -> tuple:
    """The key that picks `index` along `dim` and position i along every other dim i."""
    xp = xp_of(index)
    ndim = index.ndim
    return tuple(
        index if d == dim else xp.arange(n).reshape((n,) + (1,) * (ndim - d - 1))
        for d, n in enumerate(index.shape)
    )


def _zeroed_at(g: Any, key: tuple) -> Any:
    """`g` with zeros at `key` (the positions a write overwrote)."""
    if isinstance(g, Tensor):
        keep = xp_of(g._data).ones(g.shape, g.dtype)
        keep[key] = 0
        return mul_const(g, keep)
    out = g.copy()
    out[key] = 0
    return out


def _into_zeros(g: Any, key: tuple, shape: tuple[int, ...]) -> Any:
    """Zeros of `shape` with `g` at the basic `key` (a gradient for a larger source)."""
    if isinstance(g, Tensor):
        return IndexAccumulateBackward0.apply(g, key=key, shape=shape)
    out = xp_of(g).zeros(shape, g.dtype)
    out[key] = g
    return out


# ------------------------------------------------------------------- reads
class GatherBackward0(IndexBackward0):
    __slots__ = ()
    op_name = "gather"


class IndexSelectBackward0(IndexBackward0):
    __slots__ = ()
    op_name = "index_select"


class MaskedSelectBackward0(IndexBackward0):
    __slots__ = ()
    op_name = "masked_select"


# ------------------------------------------------------------------ writes
class _Put(Op):
    """A copy of input 0 with input 1 (a tensor or a scalar) written or added at `key`."""

    __slots__ = ("_key", "_src_key", "_src_shape", "_alpha")
    saved_slots = ("_key",)  # the index arrays, as PyTorch saves the index tensor
    accumulate: ClassVar[bool] = False

    def forward(self, a: Any, src: Any, key: tuple, src_key: Any = None, alpha: Any = 1) -> Any:
        self._key, self._src_key, self._alpha = key, src_key, alpha
        self._src_shape = getattr(src, "shape", ())
        out = a.copy()
        value = src[src_key] if src_key is not None else src
        if alpha != 1:
            value = value * alpha
        if self.accumulate:
            add_at(out, key, value)
        else:
            out[key] = value
        return out

    def backward(self, g: Any) -> tuple:
        self.check_released()
        need = self.needs_input_grad
        ga = gs = None
        if need[0]:
            ga = g if self.accumulate else _zeroed_at(g, self._key)
        if need[1]:
            gs = getitem(g, self._key)
            if self._alpha != 1:
                gs = gs * self._alpha
            if self._src_key is not None:
                gs = _into_zeros(gs, self._src_key, self._src_shape)
        return ga, gs


class ScatterBackward0(_Put):
    __slots__ = ()
    op_name = "scatter"


class ScatterBackward1(_Put):
    __slots__ = ()
    op_name = "scatter"


class ScatterAddBackward0(_Put):
    __slots__ = ()
    op_name = "scatter_add"
    accumulate = True


class IndexAddBackward0(_Put):
    __slots__ = ()
    op_name = "index_add"
    accumulate = True


class IndexCopyBackward0(_Put):
    __slots__ = ()
    op_name = "index_copy"


class MaskedFillBackward0(Op):
    __slots__ = ("_mask",)
    saved_slots = ("_mask",)
    op_name = "masked_fill"

    def forward(self, a: Any, value: Any, mask: Any) -> Any:
        self._mask = mask
        xp = xp_of(a)
        return xp.where(mask, xp.asarray(value, dtype=a.dtype), a)

    def backward(self, g: Any) -> tuple:
        self.check_released()
        need = self.needs_input_grad
        mask = self._mask
        ga = where(mask, 0.0, g) if need[0] else None
        gv = sum_dims(where(mask, g, 0.0)) if need[1] else None
        return ga, gv


# ----------------------------------------------------------------- checks
def _index(name: str, input: Tensor, index: Any) -> Any:
    """The index tensor's array, after checking its type, device and integer dtype."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): index must be a Tensor, got {type(index).__name__}")
    if index.device is not input.device:
        raise DeviceError(
            f"{name}(): expected index on the input's device {input.device}, got {index.device}"
        )
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index, got {index.dtype}")
    return index._data


def _check_range(name: str, index: Any, size: int, axis: int, error: type) -> None:
    if index.size == 0:
        return
    low, high = int(index.min()), int(index.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise error(f"{name}(): index {bad} is out of bounds for dimension {axis} with size {size}")


def _check_along(name: str, input: Tensor, index: Any, axis: int, src: Any = None) -> None:
    """PyTorch's rules for gather/scatter: same ndim; index no larger elsewhere (nor than src)."""
    if index.ndim != input.ndim:
        raise RuntimeError(
            f"{name}(): Index tensor must have the same number of dimensions as input tensor "
            f"(index has {index.ndim}, input has {input.ndim})"
        )
    for d, n in enumerate(index.shape):
        too_big = d != axis and n > input.shape[d]
        if too_big or (src is not None and n > src.shape[d]):
            against = "" if src is None else f" and to be no larger size than src {list(src.shape)}"
            raise RuntimeError(
                f"{name}(): Expected index {list(index.shape)} to be no larger than self "
                f"{list(input.shape)} apart from dimension {axis}{against}"
            )
    _check_range(name, index, input.shape[axis], axis, RuntimeError)


def _vector_index(name: str, input: Tensor, index: Any, axis: int) -> Any:
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, got {index.ndim} dims")
    index = index.reshape(-1)
    length = input.shape[axis] if input.ndim else 1
    _check_range(name, index, length, axis, IndexError)
    return index


# --------------------------------------------------------------- functions
@batchable
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values of `input` picked along `dim` by `index`: `out[i][j] = input[i][index[i][j]]` for
    dim=1 (and likewise for any dim)."""
    idx = _index("gather", input, index)
    axis = normalize_dim(dim, input.ndim)
    _check_along("gather", input, idx, axis)
    return GatherBackward0.apply(input, key=grid_key(idx, axis))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values at `indices` along `dim` (broadcasting the other dims), or in the flattened input."""
    idx = _index("take_along_dim", input, indices)
    if dim is None:
        flat = input.reshape(-1)
        idx = idx.reshape(-1)
        _check_range("take_along_dim", idx, flat.shape[0], 0, RuntimeError)
        return GatherBackward0.apply(flat, key=(idx,))
    if idx.ndim != input.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input.ndim} dimensions for input, and {idx.ndim} dimensions "
            "for indices"
        )
    axis = normalize_dim(dim, input.ndim)
    others = [
        np.broadcast_shapes((n,), (m,))[0] if d != axis else None
        for d, (n, m) in enumerate(zip(input.shape, idx.shape))
    ]
    in_shape = tuple(input.shape[axis] if n is None else n for n in others)
    idx_shape = tuple(idx.shape[axis] if n is None else n for n in others)
    if in_shape != input.shape:
        input = input.expand(in_shape)
    idx = xp_of(idx).broadcast_to(idx, idx_shape)
    _check_range("take_along_dim", idx, input.shape[axis], axis, RuntimeError)
    return GatherBackward0.apply(input, key=grid_key(idx, axis))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of `input` at the 1-D `index` along `dim`."""
    idx = _index("index_select", input, index)
    axis = normalize_dim(dim, input.ndim)
    idx = _vector_index("index_select", input, idx, axis)
    if input.ndim == 0:
        return IndexSelectBackward0.apply(input.reshape(1), key=(idx,)).reshape(())
    return IndexSelectBackward0.apply(input, key=(slice(None),) * axis + (idx,))


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where the boolean `mask` (broadcast with input) holds, as a 1-D tensor."""
    m = _mask("masked_select", input, mask)
    shape = _broadcast("masked_select", input.shape, m.shape)
    if shape != input.shape:
        input = input.expand(shape)
    return MaskedSelectBackward0.apply(input, key=(xp_of(m).broadcast_to(m, shape),))


def _broadcast(name: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise RuntimeError(
            f"{name}(): the shape of the mask {list(b)} is not broadcastable with the input "
            f"{list(a)}"
        ) from None


def _mask(name: str, input: Tensor, mask: Any) -> Any:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): mask must be a Tensor, got {type(mask).__name__}")
    if mask.device is not input.device:
        raise DeviceError(
            f"{name}(): expected mask on the input's device {input.device}, got {mask.device}"
        )
    if mask.dtype.kind != "b":
        raise RuntimeError(
            f"{name} only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    return mask._data


def _source(name: str, input: Tensor, src: Any) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"{name}(): src must be a Tensor, got {type(src).__name__}")
    if src.dtype != input.dtype:
        raise RuntimeError(
            f"{name}(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
            f"{src.dtype})"
        )
    return src


def scatter(
    input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None
) -> Tensor:
    """A copy of `input` with `src` (a tensor, or the scalar `value`) written at `index` along
    `dim`: `out[i][index[i][j]] = src[i][j]` for dim=1."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    idx = _index("scatter", input, index)
    axis = normalize_dim(dim, input.ndim)
    key = grid_key(idx, axis)
    if src is None:
        if value is None:
            raise TypeError("scatter(): expected a src tensor or a value")
        if isinstance(value, Tensor):
            value = value.item()
        _check_along("scatter", input, idx, axis)
        return ScatterBackward1.apply(input, value, key=key)
    src = _source("scatter", input, src)
    _check_along("scatter", input, idx, axis, src._data)
    return ScatterBackward0.apply(input, src, key=key, src_key=_src_key(idx, src))


def _src_key(index: Any, src: Tensor) -> Any:
    """Slices taking the index's shape out of a larger source (None when they match)."""
    if index.shape == src.shape:
        return None
    return tuple(slice(0, n) for n in index.shape)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` added at `index` along `dim` (repeated indices add up)."""
    idx = _index("scatter_add", input, index)
    axis = normalize_dim(dim, input.ndim)
    src = _source("scatter_add", input, src)
    _check_along("scatter_add", input, idx, axis, src._data)
    return ScatterAddBackward0.apply(
        input, src, key=grid_key(idx, axis), src_key=_src_key(idx, src)
    )


def _index_put(name: str, input: Tensor, dim: int, index: Tensor, source: Any) -> tuple:
    idx = _index(name, input, index)
    axis = normalize_dim(dim, input.ndim)
    idx = _vector_index(name, input, idx, axis)
    source = _source(name, input, source)
    expected = input.shape[:axis] + (idx.shape[0],) + input.shape[axis + 1 :]
    if source.shape != expected:
        raise RuntimeError(
            f"{name}(): Number of indices ({idx.shape[0]}) should be equal to source.size(dim) "
            f"and source should have shape {list(expected)} for dim {axis}, got "
            f"{describe(source)}"
        )
    return (slice(None),) * axis + (idx,), source


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of `input` with `alpha * source` added at the 1-D `index` along `dim`."""
    key, source = _index_put("index_add", input, dim, index, source)
    return IndexAddBackward0.apply(input, source, key=key, alpha=alpha)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` with `source`'s slices written at the 1-D `index` along `dim`."""
    key, source = _index_put("index_copy", input, dim, index, source)
    return IndexCopyBackward0.apply(input, source, key=key)


@batchable
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of `input` with `value` (a number or a 0-d tensor) where `mask` holds."""
    m = _mask("masked_fill", input, mask)
    _broadcast("masked_fill", input.shape, m.shape)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                "masked_fill only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        if value.device is not input.device and not value.requires_grad:
            value = value.item()
    return MaskedFillBackward0.apply(input, value, mask=m)


@batchable
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    require_tensor("nonzero", input)
    data = input._data
    xp = xp_of(data)
    found = xp.nonzero(xp.atleast_1d(data))
    if as_tuple:
        return tuple(Tensor._wrap(i.astype(np.int64), input.device) for i in found)
    if data.ndim == 0:
        return Tensor._wrap(xp.zeros((len(found[0]), 0), np.int64), input.device)
    return Tensor._wrap(xp.stack(found, axis=1).astype(np.int64), input.device)


def argwhere(input: Tensor) -> Tensor:
    """`nonzero(input)`: an (n, ndim) tensor of the non-zero elements' indices."""
    return nonzero(input)


# --------------------------------------------------------------- in place
def _in_place(name: str, out_of_place: Any) -> Any:
    def method(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        def compute(x: Tensor, *_: Any) -> Tensor:
            out = out_of_place(x, *args, **kwargs)
            _check_shape(input, out, name)  # in place, the input cannot grow by broadcasting
            return out

        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and a._rg]
        return _through_copy(input, compute, *tensors)

    method.__name__ = name
    method.__doc__ = f"In-place `{name.rstrip('_')}`: bumps the version counter."
    # Its signature, for `inspect` and the type stubs.
    method.__wrapped__ = out_of_place  # type: ignore[attr-defined]  # a function's attribute
    return method


scatter_ = _in_place("scatter_", scatter)
scatter_add_ = _in_place("scatter_add_", scatter_add)
index_add_ = _in_place("index_add_", index_add)
index_copy_ = _in_place("index_copy_", index_copy)
masked_fill_ = _in_place("masked_fill_", masked_fill)


FUNCTIONS = {
    "gather": gather,
    "take_along_dim": take_along_dim,
    "index_select": index_select,
    "masked_select": masked_select,
    "scatter": scatter,
    "scatter_add": scatter_add,
    "index_add": index_add,
    "index_copy": index_copy,
    "masked_fill": masked_fill,
    "nonzero": nonzero,
    "argwhere": argwhere,
}
METHODS = {
    "scatter_": scatter_,
    "scatter_add_": scatter_add_,
    "index_add_": index_add_,
    "index_copy_": index_copy_,
    "masked_fill_": masked_fill_,
}
