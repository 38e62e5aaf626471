"""Running extremes, order statistics, counting and NaN-aware reductions: cummax cummin
logcumsumexp median nanmedian mode quantile nanquantile nansum nanmean count_nonzero aminmax
unique unique_consecutive bincount histc searchsorted bucketize.

Values that pick input elements (cummax, median, quantile, ...) are gathered from the input by
index, so they carry PyTorch's gradient; indices, counts and bins are computed on the arrays.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .dual import data_of, mul_const, xp_of
from .elementwise import where
from .gather import gather
from .reduction import normalize_dim
from .shape import stack
from .sorting import sort


class ValuesIndices(NamedTuple):
    values: Tensor
    indices: Tensor


class MinMax(NamedTuple):
    min: Tensor
    max: Tensor


def _wrap(array: Any, like: Tensor) -> Tensor:
    return Tensor._wrap(xp_of(like._data).asarray(array), like.device)


def _running_extreme(name: str, input: Tensor, dim: int, better: Any) -> ValuesIndices:
    require_tensor(name, input)
    if input.ndim == 0:
        return ValuesIndices(input.clone(), _wrap(np.zeros((), np.int64), input))
    dim = normalize_dim(dim, input.ndim)
    data = xp_of(input._data).moveaxis(input._data, dim, 0)
    xp = xp_of(data)
    index = xp.zeros(data.shape, np.int64)
    best = data[0] if data.shape[0] else data[:0]
    for i in range(1, data.shape[0]):
        take = better(data[i], best) | (data[i] == best)  # ties: the latest, as PyTorch
        if data.dtype.kind == "f":
            take |= xp.isnan(data[i]) & ~xp.isnan(best)
            take &= ~xp.isnan(best) | xp.isnan(data[i])
        best = xp.where(take, data[i], best)
        index[i] = xp.where(take, i, index[i - 1])
    indices = _wrap(xp.ascontiguousarray(xp.moveaxis(index, 0, dim)), input)
    return ValuesIndices(gather(input, dim, indices), indices)


def cummax(input: Tensor, dim: int) -> ValuesIndices:
    """The running maximum along `dim` and where it was (the latest of equal values)."""
    return _running_extreme("cummax", input, dim, lambda a, b: a > b)


def cummin(input: Tensor, dim: int) -> ValuesIndices:
    """The running minimum along `dim` and where it was (the latest of equal values)."""
    return _running_extreme("cummin", input, dim, lambda a, b: a < b)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, shifted by the maximum so exp never overflows."""
    require_tensor("logcumsumexp", input)
    dim = normalize_dim(dim, max(input.ndim, 1))
    shift = input.detach().amax(dim, keepdim=True) if input.numel() else input.detach()
    shift = where(shift.isfinite(), shift, 0.0)
    return (input - shift).exp().cumsum(dim).log() + shift


# --------------------------------------------------------- order statistics
class MedianBackward0(Op):
    """The median of all elements; its gradient is shared evenly among the elements equal to it
    (among the nans when it is nan), as PyTorch's evenly distributed rule."""

    __slots__ = ()
    saved_inputs = (0,)
    saves_output = True

    def forward(self, a: Any, value: Any) -> Any:
        return xp_of(a).asarray(value, dtype=a.dtype).reshape(())

    def backward(self, g: Any) -> Any:
        a, out = self.saved(g)
        a, out = data_of(a), data_of(out)
        xp = xp_of(a)
        hit = xp.isnan(a) if a.dtype.kind in "fc" and bool(xp.isnan(out)) else a == out
        share = hit.astype(g.dtype) / hit.sum(dtype=g.dtype)
        return mul_const(g, share)


class NanmedianBackward0(MedianBackward0):
    __slots__ = ()


def _order_statistic(name: str, input: Tensor, dim: Any, keepdim: bool, ignore_nan: bool) -> Any:
    require_tensor(name, input)
    flat = dim is None
    x = input.detach().reshape(-1) if flat else input
    axis = 0 if flat else normalize_dim(dim, max(x.ndim, 1))
    if x.ndim == 0:
        x, axis = x.reshape(1), 0
    if x.shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    values, order = sort(x, axis, stable=True)
    xp = xp_of(x._data)
    if ignore_nan:
        counts = (~xp.isnan(x._data)).sum(axis=axis, keepdims=True)
        k = xp.maximum(counts - 1, 0) // 2
    else:
        nans = xp.isnan(x._data).any(axis=axis, keepdims=True) if x.dtype.kind == "f" else False
        k = xp.where(nans, x.shape[axis] - 1, (x.shape[axis] - 1) // 2) * xp.ones(
            values.shape[:axis] + (1,) + values.shape[axis + 1 :], np.int64
        )
    position = _wrap(xp.asarray(k, dtype=np.int64), x)
    index = gather(order, axis, position)
    value = gather(x, axis, index)
    if flat:
        node = NanmedianBackward0 if ignore_nan else MedianBackward0
        return node.apply(input, value=value._data.reshape(()))
    if not keepdim:
        value, index = value.squeeze(axis), index.squeeze(axis)
    return ValuesIndices(value, index)


def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median (and its index along `dim`); nan when a row holds nan."""
    return _order_statistic("median", input, dim, keepdim, False)


def nanmedian(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median of the non-nan elements (and its index along `dim`)."""
    return _order_statistic("nanmedian", input, dim, keepdim, True)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The most frequent value along `dim` (the smallest of ties) and its last index."""
    require_tensor("mode", input)
    axis = normalize_dim(dim, max(input.ndim, 1))
    x = input.reshape(1) if input.ndim == 0 else input
    data = np.moveaxis(np.asarray(x.detach().cpu()._data), axis, -1)
    rows = data.reshape(-1, data.shape[-1])
    found = np.zeros(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        values, counts = np.unique(row, return_counts=True)
        best = values[np.argmax(counts)]
        found[r] = np.nonzero(row == best)[0][-1]
    index = _wrap(np.moveaxis(found.reshape(data.shape[:-1] + (1,)), -1, axis).copy(), x)
    value = gather(x, axis, index)
    if not keepdim:
        value, index = value.squeeze(axis), index.squeeze(axis)
    if input.ndim == 0:
        value, index = value.reshape(()), index.reshape(())
    return ValuesIndices(value, index)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(
    name: str, input: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool
) -> Tensor:
    require_tensor(name, input)
    if input.dtype.kind != "f":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
            f"Got {interpolation}"
        )
    scalar_q = not isinstance(q, Tensor)
    qs = np.atleast_1d(np.asarray(q.tolist() if isinstance(q, Tensor) else q, np.float64))
    if ((qs < 0) | (qs > 1)).any():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    axis = 0 if dim is None else normalize_dim(dim, max(x.ndim, 1))
    if x.ndim == 0:
        x = x.reshape(1)
    values, _ = sort(x, axis)
    xp = xp_of(x._data)
    n = x.shape[axis]
    counts = (~xp.isnan(x._data)).sum(axis=axis, keepdims=True) if ignore_nan else None
    outs = []
    for qv in qs:
        if counts is not None:  # ignore_nan
            last = xp.maximum(counts - 1, 0).astype(np.float64)
        else:
            has_nan = xp.isnan(x._data).any(axis=axis, keepdims=True)
            last = xp.where(has_nan, np.nan, float(n - 1)) * 1.0
        rank = qv * last
        low = xp.floor(xp.nan_to_num(rank, nan=n - 1)).astype(np.int64)
        high = xp.ceil(xp.nan_to_num(rank, nan=n - 1)).astype(np.int64)
        if interpolation == "nearest":
            low = high = xp.round(xp.nan_to_num(rank, nan=n - 1)).astype(np.int64)
        low_v = gather(values, axis, _wrap(xp.minimum(low, n - 1), x))
        high_v = gather(values, axis, _wrap(xp.minimum(high, n - 1), x))
        if interpolation in ("lower", "nearest"):
            out = low_v
        elif interpolation == "higher":
            out = high_v
        elif interpolation == "midpoint":
            out = (low_v + high_v) * 0.5
        else:
            # a row with nan (or only nan) picks its last sorted element, a nan, with weight 0
            weight = _wrap(xp.nan_to_num(rank - low).astype(x.dtype), x)
            out = low_v + (high_v - low_v) * weight
        outs.append(out if keepdim or dim is None and keepdim else out.squeeze(axis))
    if dim is None and keepdim:
        outs = [o.reshape((1,) * input.ndim) for o in outs]
    elif dim is None:
        outs = [o.reshape(()) for o in outs]
    if scalar_q or (isinstance(q, Tensor) and q.ndim == 0):
        return outs[0]

    return stack(outs, 0)


def quantile(
    input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The q-th quantiles along `dim` (all elements when None); nan where a row holds nan."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(
    input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The q-th quantiles of the non-nan elements along `dim`."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# -------------------------------------------------------- NaN-aware sums
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum treating nan as zero (nan elements get a zero gradient)."""
    require_tensor("nansum", input)
    if input.dtype.kind == "f":
        input = where(input.isnan(), 0.0, input)
    return input.sum(dim=dim, keepdim=keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of the non-nan elements."""
    require_tensor("nanmean", input)
    if input.dtype.kind != "f":
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{input.dtype}"
        )
    present = (~input.isnan()).sum(dim=dim, keepdim=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / present


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """How many elements are not zero, over `dim` (all when None)."""
    require_tensor("count_nonzero", input)
    return (input != 0).sum(dim=dim)


def aminmax(input: Tensor, *, dim: Any = None, keepdim: bool = False) -> MinMax:
    """(amin, amax) over `dim`."""
    require_tensor("aminmax", input)
    if dim is None:
        return MinMax(
            input.amin() if not keepdim else input.amin().reshape((1,) * input.ndim),
            input.amax() if not keepdim else input.amax().reshape((1,) * input.ndim),
        )
    return MinMax(input.amin(dim, keepdim), input.amax(dim, keepdim))


# --------------------------------------------------------------- counting
def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,  # noqa: A002
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct elements (or slices along `dim`), sorted, with inverse indices and counts."""
    require_tensor("unique", input)
    data = xp_of(input._data)
    axis = None if dim is None else normalize_dim(dim, input.ndim)
    values, inverse, counts = data.unique(
        input._data, return_inverse=True, return_counts=True, axis=axis
    )
    if axis is None:
        inverse = inverse.reshape(input.shape)
    out = [_wrap(values, input)]
    if return_inverse:
        out.append(_wrap(inverse.astype(np.int64), input))
    if return_counts:
        out.append(_wrap(counts.astype(np.int64), input))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """The input with runs of equal elements (or slices along `dim`) kept once."""
    require_tensor("unique_consecutive", input)
    xp = xp_of(input._data)
    axis = 0 if dim is None else normalize_dim(dim, input.ndim)
    data = input._data.reshape(-1) if dim is None else xp.moveaxis(input._data, axis, 0)
    n = data.shape[0]
    if n:
        changed = (data[1:] != data[:-1]).reshape(n - 1, -1).any(axis=1)
        starts = xp.concatenate([xp.asarray([True]), changed])
    else:
        starts = xp.zeros(0, bool)
    values = data[starts]
    if dim is not None:
        values = xp.moveaxis(values, 0, axis)
    out = [_wrap(xp.ascontiguousarray(values), input)]
    group = xp.cumsum(starts) - 1
    if return_inverse:
        out.append(
            _wrap(group.reshape(input.shape if dim is None else (n,)).astype(np.int64), input)
        )
    if return_counts:
        out.append(_wrap(xp.bincount(group, minlength=int(starts.sum())).astype(np.int64), input))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in a 1-D tensor (summed weights if given)."""
    require_tensor("bincount", input)
    if input.ndim != 1 or input.dtype.kind not in "iu":
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.numel() and int(input._data.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    xp = xp_of(input._data)
    if weights is None:
        return _wrap(xp.bincount(input._data, minlength=minlength).astype(np.int64), input)
    counts = xp.bincount(input._data, weights=weights._data, minlength=minlength)
    dtype = weights.dtype if weights.dtype.kind == "f" else np.float64
    return _wrap(counts.astype(dtype), input)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """A histogram of `bins` equal bins over [min, max] (the data's range when both are 0)."""
    require_tensor("histc", input)
    xp = xp_of(input._data)
    data = input._data.reshape(-1)
    low, high = float(min), float(max)
    if low == high and data.size:
        low, high = float(data.min()), float(data.max())
    if low == high:
        low, high = low - 1, high + 1
    inside = data[(data >= low) & (data <= high)]
    counts, _ = xp.histogram(inside, bins=bins, range=(low, high))
    return _wrap(counts.astype(input.dtype), input)


def searchsorted(
    sorted_sequence: Tensor,
    input: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Any = None,
) -> Tensor:
    """Where each value would be inserted in the sorted innermost rows to keep them sorted."""
    require_tensor("searchsorted", sorted_sequence, "sorted_sequence")
    xp = xp_of(sorted_sequence._data)
    seq = sorted_sequence._data
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    values = input._data if isinstance(input, Tensor) else xp.asarray(input)
    where_side = side or ("right" if right else "left")
    if seq.ndim == 1:
        out = xp.searchsorted(seq, values, side=where_side)
    else:
        rows = seq.reshape(-1, seq.shape[-1])
        flat_values = values.reshape(rows.shape[0], -1)
        out = xp.stack([xp.searchsorted(r, v, side=where_side) for r, v in zip(rows, flat_values)])
        out = out.reshape(values.shape)
    return _wrap(xp.asarray(out).astype(np.int32 if out_int32 else np.int64), sorted_sequence)


def bucketize(
    input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
) -> Tensor:
    """The index of the bucket of each value among 1-D `boundaries`."""
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


FUNCTIONS: dict[str, Any] = {
    "cummax": cummax,
    "cummin": cummin,
    "logcumsumexp": logcumsumexp,
    "median": median,
    "nanmedian": nanmedian,
    "mode": mode,
    "quantile": quantile,
    "nanquantile": nanquantile,
    "nansum": nansum,
    "nanmean": nanmean,
    "count_nonzero": count_nonzero,
    "aminmax": aminmax,
    "unique": unique,
    "unique_consecutive": unique_consecutive,
    "bincount": bincount,
    "histc": histc,
    "searchsorted": searchsorted,
    "bucketize": bucketize,
}
