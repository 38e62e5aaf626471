"""Sorting and selection along a dimension: sort, argsort, topk, kthvalue, msort.

Each op orders the input along `dim` (a stable sort, so equal values keep their order, and
descending order puts the earlier of equal values first, as PyTorch's stable sort does), takes a
range of positions of that order and gathers the values there. The node's backward puts the
gradient back at the picked indices (the key of a gather), so it is differentiable again for
`create_graph`; the indices output carries no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..batching import batchable
from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .dual import as_array, unsqueeze, xp_of
from .gather import grid_key
from .indexing import IndexAccumulateBackward0, scatter_into_zeros
from .reduction import normalize_dim
from .return_types import kthvalue as kthvalue_result
from .return_types import sort as sort_result
from .return_types import topk as topk_result


def order(a: Any, axis: int, descending: bool) -> Any:
    """Indices that sort `a` along `axis` stably (descending: larger first, ties in order)."""
    xp = xp_of(a)
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable")
    # Sorting the reversed input ascending and reading it backwards puts larger values first
    # and, among equal values, the earlier one first; NaN (last ascending) comes first.
    n = a.shape[axis]
    backwards = xp.argsort(xp.flip(a, axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(backwards, axis)


class _Pick(Op):
    """Values at positions [start, stop) of the order along `dim`, and their indices."""

    __slots__ = ("_key", "_shape", "_dim", "_keepdim")
    saved_slots = ("_key",)
    non_differentiable_outputs = (1,)

    def forward(
        self, a: Any, dim: int, descending: bool, start: int, stop: int, keepdim: bool = True
    ) -> tuple:
        self._shape, self._dim, self._keepdim = a.shape, dim, keepdim
        picked = order(a, dim, descending)
        if (start, stop) != (0, a.shape[dim]):
            picked = picked[(slice(None),) * dim + (slice(start, stop),)]
        picked = picked.astype(np.int64, copy=False)
        self._key = grid_key(picked, dim)
        values = a[self._key]
        if not keepdim:
            values, picked = values.squeeze(dim), picked.squeeze(dim)
        return as_array(values), as_array(picked)

    def backward(self, g: Any, _: Any = None) -> Any:
        self.check_released()
        if not self._keepdim:
            g = unsqueeze(g, self._dim)
        if isinstance(g, Tensor):
            return IndexAccumulateBackward0.apply(g, key=self._key, shape=self._shape)
        return scatter_into_zeros(g, self._key, self._shape, True)


class SortBackward0(_Pick):
    __slots__ = ()
    op_name = "sort"


class SortBackward1(_Pick):
    __slots__ = ()
    op_name = "sort"


class TopkBackward0(_Pick):
    __slots__ = ()
    op_name = "topk"


class KthvalueBackward0(_Pick):
    __slots__ = ()
    op_name = "kthvalue"


def _apply(op: type[Op], input: Tensor, dim: int, **kwargs: Any) -> tuple:
    """Run a pick op; a 0-d input is treated as one element along dim 0."""
    axis = normalize_dim(dim, input.ndim)
    if input.ndim == 0:
        values, indices = op.apply(input.reshape(1), dim=0, **kwargs)
        return values.reshape(()), indices.reshape(())
    return op.apply(input, dim=axis, **kwargs)


def sort(
    input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None
) -> Any:
    """(values, indices) of `input` sorted along `dim`; equal values keep their order."""
    require_tensor("sort", input)
    n = input.shape[normalize_dim(dim, input.ndim)] if input.ndim else 1
    op = SortBackward0 if stable is None else SortBackward1
    return sort_result(*_apply(op, input, dim, descending=bool(descending), start=0, stop=n))


@batchable
def argsort(
    input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False
) -> Tensor:
    """The indices that sort `input` along `dim` (no gradient)."""
    require_tensor("argsort", input)
    axis = normalize_dim(dim, input.ndim)
    data = input._data
    if data.ndim == 0:
        return Tensor._wrap(xp_of(data).zeros((), np.int64), input.device)
    indices = order(data, axis, bool(descending)).astype(np.int64, copy=False)
    return Tensor._wrap(indices, input.device)


def msort(input: Tensor) -> Tensor:
    """`input` sorted along dim 0."""
    return sort(input, 0).values


def topk(
    input: Tensor,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,  # noqa: A002
) -> Any:
    """(values, indices) of the `k` largest (or smallest) elements along `dim`, in order."""
    require_tensor("topk", input)
    n = input.shape[normalize_dim(dim, input.ndim)] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, dimension size {n})")
    return topk_result(
        *_apply(TopkBackward0, input, dim, descending=bool(largest), start=0, stop=int(k))
    )


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """(values, indices) of the `k`-th smallest element (from 1) along `dim`."""
    require_tensor("kthvalue", input)
    axis = normalize_dim(dim, input.ndim)
    n = input.shape[axis] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(
            f"kthvalue(): selected number k out of range for dimension {axis} (k={k}, size {n})"
        )
    values, indices = _apply(
        KthvalueBackward0, input, dim, descending=False, start=k - 1, stop=k, keepdim=keepdim
    )
    return kthvalue_result(values, indices)


FUNCTIONS = {
    "sort": sort,
    "argsort": argsort,
    "msort": msort,
    "topk": topk,
    "kthvalue": kthvalue,
}
