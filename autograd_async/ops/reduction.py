"""Reductions: sum, mean, max, min, amax, amin, var, std, logsumexp, argmax, argmin.

`dim` is an int or a tuple (negative values count from the end); without `keepdim` the reduced axes
are dropped, and backward puts them back (`unsqueeze_dims`) before broadcasting the gradient.
"""

from __future__ import annotations

import math
from typing import Any

from ..batching import batchable
from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from ..devices import enters_device
from .dual import (
    as_array,
    data_of,
    exp,
    expand,
    mul_const,
    quiet,
    sum_dims,
    unsqueeze_dims,
    where,
    xp_of,
)
from .elementwise import maximum, minimum
from .promotion import as_float
from .return_types import max as max_result  # what max/min return with a dim
from .return_types import min as min_result


def normalize_dim(dim: int, ndim: int) -> int:
    """`dim` as a non-negative axis, or PyTorch's IndexError for one out of range."""
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim % ndim if ndim else 0


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """A tuple of non-negative axes from an int or a sequence, or None for all axes."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = tuple(normalize_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        repeated = next(d for d in out if out.count(d) > 1)
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    if not ndim:
        return ()
    return out


def _count(shape: tuple[int, ...], dims: tuple[int, ...] | None) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


def _divisor(shape: tuple[int, ...], dims: tuple[int, ...] | None) -> int:
    # An empty reduction divides by 1: its gradient is empty anyway.
    n = _count(shape, dims)
    return n if n else 1


class _Reduction(Op):
    """Shared state of reductions over `dims` (None: all axes)."""

    __slots__ = ("_shape", "_dims", "_keepdim")

    def _setup(self, a: Any, dims: Any, keepdim: bool) -> None:
        self._shape = a.shape
        self._dims = dims
        self._keepdim = keepdim

    def _kept(self, x: Any) -> Any:
        """`x` (shaped like the output) with the reduced axes back as length 1."""
        if self._keepdim:
            return x
        dims = self._dims if self._dims is not None else tuple(range(len(self._shape)))
        return unsqueeze_dims(x, dims)


class SumBackward0(_Reduction):
    __slots__ = ()
    op_name = "sum"

    def forward(self, a: Any) -> Any:
        self._setup(a, None, False)
        return as_array(a.sum())

    def backward(self, g: Any) -> Any:
        return expand(g, self._shape)


class SumBackward1(_Reduction):
    __slots__ = ()
    op_name = "sum"

    def forward(self, a: Any, dims: tuple[int, ...], keepdim: bool) -> Any:
        self._setup(a, dims, keepdim)
        return as_array(a.sum(axis=dims, keepdims=keepdim))

    def backward(self, g: Any) -> Any:
        return expand(self._kept(g), self._shape)


class MeanBackward0(_Reduction):
    __slots__ = ()
    op_name = "mean"

    def forward(self, a: Any) -> Any:
        self._setup(a, None, False)
        return as_array(a.mean())

    def backward(self, g: Any) -> Any:
        return expand(g / _divisor(self._shape, None), self._shape)


class MeanBackward1(_Reduction):
    __slots__ = ()
    op_name = "mean"

    def forward(self, a: Any, dims: tuple[int, ...], keepdim: bool) -> Any:
        self._setup(a, dims, keepdim)
        return as_array(a.mean(axis=dims, keepdims=keepdim))

    def backward(self, g: Any) -> Any:
        return expand(self._kept(g) / _divisor(self._shape, self._dims), self._shape)


class _Extreme(_Reduction):
    """amax/amin and full max/min: the gradient is shared evenly among tied extremes."""

    __slots__ = ()
    saved_inputs = (0,)
    saves_output = True
    _largest = True
    # max()/min() over everything share the gradient among the nans when the result is nan;
    # amax/amin compare values only, as PyTorch's.
    _nan_ties = False

    def forward(self, a: Any, dims: Any = None, keepdim: bool = False) -> Any:
        self._setup(a, dims, keepdim)
        reduce = a.max if self._largest else a.min
        return as_array(reduce(axis=dims, keepdims=keepdim))

    def backward(self, g: Any) -> Any:
        a, out = self.saved(g)
        a, out = data_of(a), data_of(out)
        hit = a == self._kept(out)
        if self._nan_ties and self._dims is None and a.dtype.kind in "fc":
            xp = xp_of(a)
            if bool(xp.isnan(out)):  # PyTorch's full max/min: a nan result comes from every nan
                hit = xp.isnan(a)
        count = hit.sum(axis=self._dims, keepdims=True)
        with quiet():  # a nan extreme ties with nothing: 0 / 0
            share = hit.astype(g.dtype) / count.astype(g.dtype)
        return mul_const(self._kept(g), share)


class MaxBackward1(_Extreme):
    __slots__ = ()
    op_name = "max"
    _nan_ties = True


class MinBackward1(_Extreme):
    __slots__ = ()
    op_name = "min"
    _nan_ties = True
    _largest = False


class AmaxBackward0(_Extreme):
    __slots__ = ()
    op_name = "amax"


class AminBackward0(_Extreme):
    __slots__ = ()
    op_name = "amin"
    _largest = False


class _ExtremeAlongDim(_Reduction):
    """max/min along one dim: (values, indices); the gradient goes to the returned index."""

    __slots__ = ("_index",)
    saved_slots = ("_index",)
    non_differentiable_outputs = (1,)
    _largest = True

    def forward(self, a: Any, dim: int, keepdim: bool) -> tuple:
        self._setup(a, (dim,), keepdim)
        xp = xp_of(a)
        index = (a.argmax if self._largest else a.argmin)(axis=dim, keepdims=True)
        values = xp.take_along_axis(a, index, axis=dim)
        self._index = index
        if not keepdim:
            values, index = values.squeeze(dim), index.squeeze(dim)
        return as_array(values), as_array(index)

    def backward(self, g: Any, _: Any = None) -> Any:
        self.check_released()
        dim = self._dims[0]
        xp = xp_of(self._index)
        positions = xp.arange(self._shape[dim]).reshape((-1,) + (1,) * (len(self._shape) - dim - 1))
        onehot = (positions == self._index).astype(g.dtype)
        return mul_const(self._kept(g), onehot)


class MaxBackward0(_ExtremeAlongDim):
    __slots__ = ()
    op_name = "max"


class MinBackward0(_ExtremeAlongDim):
    __slots__ = ()
    op_name = "min"
    _largest = False


class VarBackward0(_Reduction):
    __slots__ = ("_correction",)
    op_name = "var"
    saved_inputs = (0,)

    def forward(self, a: Any, dims: Any, correction: Any, keepdim: bool) -> Any:
        self._setup(a, dims, keepdim)
        self._correction = correction
        return as_array(a.var(axis=dims, ddof=correction, keepdims=keepdim))

    def backward(self, g: Any) -> Any:
        (a,) = self.saved(g)
        n = _count(self._shape, self._dims)
        centred = a - sum_dims(a, self._dims, True) / n
        return self._kept(g) * centred * (2 / (n - self._correction))


class StdBackward0(_Reduction):
    __slots__ = ("_correction",)
    op_name = "std"
    saved_inputs = (0,)
    saves_output = True

    def forward(self, a: Any, dims: Any, correction: Any, keepdim: bool) -> Any:
        self._setup(a, dims, keepdim)
        self._correction = correction
        return as_array(a.std(axis=dims, ddof=correction, keepdims=keepdim))

    def backward(self, g: Any) -> Any:
        a, out = self.saved(g)
        n = _count(self._shape, self._dims)
        centred = a - sum_dims(a, self._dims, True) / n
        out = self._kept(out)
        with quiet():  # g / 0 where the std is 0: PyTorch masks it to 0
            scale = where(data_of(out) == 0, 0.0, self._kept(g) / out)
        return scale * centred * (1 / (n - self._correction))


def logsumexp_array(a: Any, dims: Any, keepdim: bool) -> Any:
    """log(sum(exp(a))) over `dims`, shifted by the max so exp never overflows."""
    xp = xp_of(a)
    m = a.max(axis=dims, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # all -inf (or inf) rows: no shift, as PyTorch
    with quiet():  # log(0) for all -inf rows
        out = xp.log(xp.exp(a - m).sum(axis=dims, keepdims=True)) + m
    return as_array(out if keepdim else out.squeeze(dims))


class LogsumexpBackward0(_Reduction):
    __slots__ = ()
    op_name = "logsumexp"
    saved_inputs = (0,)
    saves_output = True

    def forward(self, a: Any, dims: Any, keepdim: bool) -> Any:
        self._setup(a, dims, keepdim)
        return logsumexp_array(a, dims, keepdim)

    def backward(self, g: Any) -> Any:
        a, out = self.saved(g)
        with quiet():  # -inf - -inf
            return self._kept(g) * exp(a - self._kept(out))


# ---------------------------------------------------------------- functions
def _float_only(input: Tensor, name: str) -> None:
    if input.dtype.kind not in "fc":
        got = torch_type_name(input.dtype)
        raise RuntimeError(
            f"{name}(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {got}"
        )


def _float_spread(input: Tensor, name: str) -> None:
    # PyTorch's words for var and std (and var_mean, std_mean), unlike mean's.
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.kind not in "fc":
        which = "std and var" if name in ("var", "std") else name
        raise RuntimeError(f"{which} only support floating point and complex dtypes")


def _nonempty(input: Tensor, name: str) -> None:
    if input.numel() == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
            "reduction dim with the 'dim' argument."
        )


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum of all elements, or over `dim` (int or tuple)."""
    if dtype is not None:
        input = input.to(dtype=dtype)
    dims = normalize_dims(dim, input.ndim)
    if dims is None:
        return SumBackward0.apply(input)
    return SumBackward1.apply(input, dims=dims, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of all elements, or over `dim` (floating tensors only)."""
    if dtype is not None:
        input = input.to(dtype=dtype)
    _float_only(input, "mean")
    dims = normalize_dims(dim, input.ndim)
    if dims is None:
        return MeanBackward0.apply(input)
    return MeanBackward1.apply(input, dims=dims, keepdim=keepdim)


def _extreme(input: Tensor, dim: Any, keepdim: bool, largest: bool) -> Any:
    name = "max" if largest else "min"
    if isinstance(dim, Tensor):
        return (maximum if largest else minimum)(input, dim)
    if dim is None:
        _nonempty(input, name)
        return (MaxBackward1 if largest else MinBackward1).apply(input)
    axis = normalize_dim(dim, input.ndim)
    if input.ndim == 0:  # a 0-d tensor reduces over its one implicit element
        input, axis, keepdim = input.reshape(1), 0, False
    if input.shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    op = MaxBackward0 if largest else MinBackward0
    values, indices = op.apply(input, dim=axis, keepdim=keepdim)
    return (max_result if largest else min_result)(values, indices)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The largest element, or (values, indices) along `dim`, or the elementwise maximum."""
    return _extreme(input, dim, keepdim, True)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The smallest element, or (values, indices) along `dim`, or the elementwise minimum."""
    return _extreme(input, dim, keepdim, False)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Largest values over `dim` (all dims when empty); ties share the gradient."""
    dims = normalize_dims(dim, input.ndim) or None
    if dims is None:
        _nonempty(input, "amax")
    return AmaxBackward0.apply(input, dims=dims, keepdim=keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Smallest values over `dim` (all dims when empty); ties share the gradient."""
    dims = normalize_dims(dim, input.ndim) or None
    if dims is None:
        _nonempty(input, "amin")
    return AminBackward0.apply(input, dims=dims, keepdim=keepdim)


def _correction(unbiased: Any, correction: Any) -> Any:
    if correction is not None:
        if unbiased is not None:
            raise RuntimeError("var/std: pass either unbiased or correction, not both")
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> Tensor:
    """Variance over `dim` with `correction` (1: Bessel's, the default) or `unbiased`."""
    if isinstance(dim, bool):  # var(unbiased) in PyTorch's older positional form
        dim, unbiased = None, dim
    _float_spread(input, "var")
    dims = normalize_dims(dim, input.ndim)
    return VarBackward0.apply(
        input, dims=dims, correction=_correction(unbiased, correction), keepdim=keepdim
    )


def std(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> Tensor:
    """Standard deviation over `dim` with `correction` (1 by default) or `unbiased`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    _float_spread(input, "std")
    dims = normalize_dims(dim, input.ndim)
    return StdBackward0.apply(
        input, dims=dims, correction=_correction(unbiased, correction), keepdim=keepdim
    )


def var_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:
    """(var, mean) over `dim`, with var's `correction`/`unbiased`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    _float_spread(input, "var_mean")
    out = var(input, dim, unbiased, keepdim, correction=correction)
    return out, mean(input, dim, keepdim) if dim is not None else _full_mean(input, keepdim)


def std_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> tuple[Tensor, Tensor]:
    """(std, mean) over `dim`, with std's `correction`/`unbiased`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    _float_spread(input, "std_mean")
    out = std(input, dim, unbiased, keepdim, correction=correction)
    return out, mean(input, dim, keepdim) if dim is not None else _full_mean(input, keepdim)


def _full_mean(input: Tensor, keepdim: bool) -> Tensor:
    out = mean(input)
    return out.reshape((1,) * input.ndim) if keepdim else out


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input))) over `dim`, computed without overflow."""
    if input.dtype.kind not in "fc":
        input = Tensor._wrap(as_float(input._data), input.device)
    dims = normalize_dims(dim, input.ndim)
    return LogsumexpBackward0.apply(input, dims=dims, keepdim=keepdim)


@batchable
@enters_device
def _arg(input: Tensor, dim: Any, keepdim: bool, largest: bool) -> Tensor:
    data = input._data
    fn = data.argmax if largest else data.argmin
    if dim is None:
        _nonempty(input, "argmax" if largest else "argmin")
        out = fn()
        if keepdim:
            out = xp_of(data).asarray(out).reshape((1,) * data.ndim)
    else:
        out = fn(axis=normalize_dim(dim, data.ndim), keepdims=keepdim) if data.ndim else fn()
    return Tensor._wrap(as_array(xp_of(data).asarray(out, dtype="int64")), input.device)


def argmax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (flattened without `dim`); no gradient."""
    return _arg(input, dim, keepdim, True)


def argmin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (flattened without `dim`); no gradient."""
    return _arg(input, dim, keepdim, False)


FUNCTIONS = {
    "sum": sum,
    "mean": mean,
    "max": max,
    "min": min,
    "amax": amax,
    "amin": amin,
    "var": var,
    "std": std,
    "logsumexp": logsumexp,
    "var_mean": var_mean,
    "std_mean": std_mean,
    "argmax": argmax,
    "argmin": argmin,
}
