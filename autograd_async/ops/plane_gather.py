"""Gather and scatter-add along the last axis of (B, S) planes: each the other's gradient.

Max pooling, adaptive max pooling, non-constant padding and nearest interpolation all pick input
elements by index; their gradients add back at those indices (repeated ones accumulate). With
`create_graph=True` the gradient of a gather is a scatter node and the other way round, so these
ops have derivatives of every order.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import xp_of


def _flat_index(index: Any, planes: int, size: int) -> Any:
    """Indices (B, P) of each plane as indices into the flattened (B * S) array."""
    base = xp_of(index).arange(planes, dtype=index.dtype).reshape((planes, 1))
    return (index + base * size).reshape(-1)


def gather_planes(x: Any, index: Any) -> Any:
    """`x` (B, S) at `index` (B, P) or (P,) along the last axis: (B, P)."""
    if index.ndim == 1:
        return x[:, index]
    return x.reshape(-1)[_flat_index(index, x.shape[0], x.shape[1])].reshape(index.shape)


def scatter_planes(g: Any, index: Any, size: int) -> Any:
    """The adjoint of `gather_planes`: (B, P) added into zeros (B, S) at `index`."""
    xp = xp_of(g)
    planes = g.shape[0]
    if index.ndim == 1:
        index = xp.broadcast_to(index, g.shape)
    flat = _flat_index(index, planes, size)
    total = xp.bincount(flat, weights=g.reshape(-1), minlength=planes * size)
    return total.astype(g.dtype, copy=False).reshape((planes, size))


class GatherBackward0(Op):
    """`x` (B, S) at `index` (B, P) or (P,) along the last axis."""

    __slots__ = ("_index", "_size")
    op_name = "gather"

    def forward(self, x: Any, index: Any, values: Any = None) -> Any:
        # `values`: the gathered elements when the caller already has them (max pooling's
        # winner pass finds them), so they are not read a second time.
        self._index, self._size = index, x.shape[1]
        return gather_planes(x, index) if values is None else values

    def backward(self, g: Any) -> tuple:
        if isinstance(g, Tensor):
            return ScatterAddBackward0.apply(g, self._index, size=self._size), None
        return scatter_planes(g, self._index, self._size), None


class ScatterAddBackward0(Op):
    """(B, P) values added into zeros (B, size) at `index` (B, P) or (P,)."""

    __slots__ = ("_index",)
    op_name = "scatter_add"

    def forward(self, g: Any, index: Any, size: int) -> Any:
        self._index = index
        return scatter_planes(g, index, size)

    def backward(self, g: Any) -> tuple:
        if isinstance(g, Tensor):
            return GatherBackward0.apply(g, self._index), None
        return gather_planes(g, self._index), None


def gather_trailing(
    input: Tensor, index: Any, dims: int, out_shape: tuple[int, ...], values: Any = None
) -> Tensor:
    """`input` flattened over its last `dims` dims, gathered at `index`, shaped `out_shape`.

    `index` indexes the flattened trailing dims: (P,) shared by every leading position, or one
    row per leading position. `values`, when given, are those elements already gathered (an
    array of the output's shape).
    """
    lead = input.shape[: input.ndim - dims]
    planes = input.reshape((math.prod(lead), math.prod(input.shape[input.ndim - dims :])))
    if index.ndim > 1:
        index = index.reshape((planes.shape[0], math.prod(out_shape)))
    if values is not None:
        values = values.reshape(planes.shape[:1] + (math.prod(out_shape),))
    out = GatherBackward0.apply(planes, index, values=values)
    return out.reshape(lead + tuple(out_shape))
