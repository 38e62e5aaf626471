"""Out-of-place writes into a copy of a tensor: select/slice/diagonal/as_strided_scatter,
index_fill, index_put, index_reduce, masked_scatter and put.

Each is the copy (`clone`) with a region written by the recorded in-place machinery (a view's
`copy_`, `x[key] = v`) or an accumulating op (`index_add`, `scatter_reduce`), so gradients
reach both the copied tensor (zero where overwritten) and the written values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .assembling import broadcast_tensors
from .dual import data_of, xp_of
from .elementwise import where


def _write_region(
    name: str, input: Tensor, src: Tensor, region_of: Callable[[Tensor], Tensor]
) -> Tensor:
    """A copy of `input` whose region `region_of(copy)` holds `src` (of the region's shape)."""
    require_tensor(name, input)
    require_tensor(name, src, "src", 2)
    out = input.clone()
    region = region_of(out)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(region.shape)}"
        )
    region.copy_(src)
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """`input` with `input.select(dim, index)` replaced by `src`."""
    return _write_region("select_scatter", input, src, lambda t: t.select(dim, index))


def slice_scatter(
    input: Tensor,
    src: Tensor,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step: int = 1,
) -> Tensor:
    """`input` with the slice start:end:step of dim `dim` replaced by `src`."""

    def region(t: Tensor) -> Tensor:
        key = (slice(None),) * (dim % max(t.ndim, 1)) + (slice(start, end, step),)
        return t[key]

    return _write_region("slice_scatter", input, src, region)


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """`input` with its diagonal (as `diagonal(offset, dim1, dim2)` takes it) replaced by src."""
    return _write_region("diagonal_scatter", input, src, lambda t: t.diagonal(offset, dim1, dim2))


def as_strided_scatter(
    input: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: int | None = None
) -> Tensor:
    """`input` with the elements `as_strided(size, stride, storage_offset)` replaced by src."""
    return _write_region(
        "as_strided_scatter", input, src, lambda t: t.as_strided(size, stride, storage_offset)
    )


def _fill_value(name: str, value: Any, like: Tensor) -> Any:
    """A number, or a 0-d tensor cast to `like`'s dtype (PyTorch refuses other tensors)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"{name}_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        return value.to(dtype=like.dtype)
    return Tensor._wrap(xp_of(like._data).asarray(value, dtype=like.dtype), like.device)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """`input` with the entries at `index` along `dim` set to `value` (a number or 0-d tensor)."""
    require_tensor("index_fill", input)
    require_tensor("index_fill", index, "index", 3)
    if index.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise IndexError("Index has to be a vector/scalar")
    ndim = max(input.ndim, 1)
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got "
            f"{dim})"
        )
    data = data_of(input)
    xp = xp_of(data)
    size = data.shape[dim] if data.ndim else 1
    positions = data_of(index).reshape(-1)
    if positions.size and (int(positions.min()) < -size or int(positions.max()) >= size):
        bad = int(positions.max()) if int(positions.max()) >= size else int(positions.min())
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    along = xp.zeros(size, dtype=bool)
    along[positions % size if size else positions] = True
    shape = [1] * data.ndim
    if data.ndim:
        shape[dim] = size
    mask = Tensor._wrap(xp.broadcast_to(along.reshape(shape), data.shape), input.device)
    return where(mask, _fill_value("index_fill", value, input), input)


def fill(input: Tensor, value: Any) -> Tensor:
    """A tensor like `input` filled with `value` (a number, or a 0-d tensor that then gets the
    summed gradient); `input` gets a zero gradient."""
    require_tensor("fill", input)
    everywhere = Tensor._wrap(xp_of(input._data).ones(input.shape, dtype=bool), input.device)
    return where(everywhere, _fill_value("fill", value, input), input)


def _long_indices(indices: Any, input: Tensor) -> list[Tensor]:
    """Index tensors as int64 tensors over leading dims (a bool mask becomes its nonzero)."""
    out: list[Tensor] = []
    for i in indices:
        if i is None:
            raise NotImplementedError("index_put with accumulate=True takes no None indices")
        if not isinstance(i, Tensor):
            raise TypeError(f"index_put(): expected Tensor indices, got {type(i).__name__}")
        if i.dtype.kind == "b":
            out.extend(i.nonzero().unbind(1))
        elif i.dtype.kind in "iu":
            out.append(i.to(dtype=np.int64))
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if len(out) > input.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.ndim} (got {len(out)})")
    return out


def index_put(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with `values` written (or, with accumulate, added) at `indices`."""
    require_tensor("index_put", input)
    if not isinstance(indices, list | tuple):
        raise TypeError(
            f"index_put(): argument 'indices' (position 2) must be tuple of Tensors, not "
            f"{type(indices).__name__}"
        )
    require_tensor("index_put", values, "values", 3)
    if not accumulate:
        out = input.clone()
        out[tuple(indices)] = values
        return out
    index = _long_indices(indices, input)
    lead = tuple(input.shape[: len(index)])
    rest = tuple(input.shape[len(index) :])
    broadcast = broadcast_tensors(*index)
    flat = broadcast[0].new_zeros(broadcast[0].shape)
    for i, size in zip(broadcast, lead, strict=True):
        flat = flat * size + i % size
    rows = values.to(dtype=input.dtype).expand(tuple(flat.shape) + rest).reshape((-1,) + rest)
    merged = input.reshape((math.prod(lead),) + rest).index_add(0, flat.reshape(-1), rows)
    return merged.reshape(tuple(input.shape))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with `source` written (or added) at flat positions `index`."""
    require_tensor("put", input)
    require_tensor("put", index, "index", 2)
    require_tensor("put", source, "source", 3)
    n = input.numel()
    positions = data_of(index)
    if positions.size and (int(positions.min()) < -n or int(positions.max()) >= n):
        bad = int(positions.max()) if int(positions.max()) >= n else int(positions.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    if index.numel() != source.numel():
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    flat_index = (index % n if n else index).reshape(-1)
    values = source.to(dtype=input.dtype).reshape(-1)
    if accumulate:
        return input.reshape(-1).index_add(0, flat_index, values).reshape(tuple(input.shape))
    out = input.clone()
    out.reshape(-1)[flat_index] = values
    return out


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` whose positions where `mask` holds take source's elements in order."""
    require_tensor("masked_scatter", input)
    require_tensor("masked_scatter", mask, "mask", 2)
    require_tensor("masked_scatter", source, "source", 3)
    if mask.dtype.kind != "b":
        raise RuntimeError(
            f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    if input.dtype != source.dtype:
        raise RuntimeError(
            f"masked_scatter_: expected self and source to have same dtypes but got "
            f"{input.dtype} and {source.dtype}"
        )
    full = mask.expand(tuple(input.shape))
    count = int(data_of(full).sum())
    if source.numel() < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = input.clone()
    out[full] = source.reshape(-1)[:count]
    return out


def index_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Reduce the slices of `source` into `input` at `index` along `dim` (prod, mean, amax,
    amin), as scatter_reduce does with the index spread over each slice."""
    require_tensor("index_reduce", input)
    require_tensor("index_reduce", index, "index", 3)
    require_tensor("index_reduce", source, "source", 4)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index should have dimension 1 or 0 (got {index.ndim})")
    ndim = max(source.ndim, 1)
    axis = dim % ndim
    shape = [1] * source.ndim
    if source.ndim:
        shape[axis] = index.numel()
    spread = index.reshape(tuple(shape)).expand(tuple(source.shape))
    return input.scatter_reduce(dim, spread, source, reduce, include_self=include_self)


FUNCTIONS: dict[str, Any] = {
    "fill": fill,
    "select_scatter": select_scatter,
    "slice_scatter": slice_scatter,
    "diagonal_scatter": diagonal_scatter,
    "as_strided_scatter": as_strided_scatter,
    "index_fill": index_fill,
    "index_put": index_put,
    "put": put,
    "masked_scatter": masked_scatter,
    "index_reduce": index_reduce,
}
NOT_METHODS = ("fill",)  # Tensor has fill_ only
