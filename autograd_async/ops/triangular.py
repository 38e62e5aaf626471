"""Matrix-structure ops: `tril`, `triu` and `diag` (a diagonal matrix from a vector, or the
diagonal of a matrix as a copy).

`tril`/`triu` act on the last two dimensions (batched), like PyTorch; their backward masks the
gradient the same way. `diag` and its backward are each other's adjoints, so each one's backward
applies the other op (which keeps a `create_graph` backward differentiable).
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import xp_of


class TrilBackward0(Op):
    __slots__ = ("_diagonal",)
    op_name = "tril"
    _upper = False

    def forward(self, a: Any, diagonal: int) -> Any:
        self._diagonal = diagonal
        xp = xp_of(a)
        return (xp.triu if self._upper else xp.tril)(a, diagonal)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return type(self).apply(g, diagonal=self._diagonal)
        xp = xp_of(g)
        return (xp.triu if self._upper else xp.tril)(g, self._diagonal)


class TriuBackward0(TrilBackward0):
    __slots__ = ()
    op_name = "triu"
    _upper = True


def _diagonal_index(shape: tuple[int, ...], offset: int, xp: Any) -> tuple:
    """Row and column indices of diagonal `offset` of a matrix of `shape`."""
    rows, cols = shape
    first_row, first_col = max(-offset, 0), max(offset, 0)
    n = max(0, min(rows - first_row, cols - first_col))
    steps = xp.arange(n)
    return steps + first_row, steps + first_col


class DiagEmbedBackward0(Op):
    """A matrix of `shape`, zero but for diagonal `offset`, which holds the vector."""

    __slots__ = ("_offset", "_shape")
    op_name = "diag"

    def forward(self, v: Any, shape: tuple[int, int], offset: int) -> Any:
        self._offset, self._shape = offset, shape
        xp = xp_of(v)
        out = xp.zeros(shape, v.dtype)
        out[_diagonal_index(shape, offset, xp)] = v
        return out

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return DiagonalBackward0_copy.apply(g, offset=self._offset)
        return g[_diagonal_index(self._shape, self._offset, xp_of(g))]


class DiagonalBackward0_copy(Op):  # noqa: N801 - PyTorch's node name
    """Diagonal `offset` of a matrix, copied into a vector."""

    __slots__ = ("_offset", "_shape")
    op_name = "diag"

    def forward(self, a: Any, offset: int) -> Any:
        self._offset, self._shape = offset, a.shape
        return a[_diagonal_index(a.shape, offset, xp_of(a))]

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return DiagEmbedBackward0.apply(g, shape=self._shape, offset=self._offset)
        xp = xp_of(g)
        out = xp.zeros(self._shape, g.dtype)
        out[_diagonal_index(self._shape, self._offset, xp)] = g
        return out


def _matrix_op(name: str, op: type[Op]) -> Any:
    def triangle(input: Tensor, diagonal: int = 0) -> Tensor:
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return op.apply(input, diagonal=int(diagonal))

    triangle.__name__ = name
    part = "lower" if name == "tril" else "upper"
    triangle.__doc__ = f"The {part} triangle of the last two dims (from `diagonal`), rest zero."
    return triangle


tril = _matrix_op("tril", TrilBackward0)
triu = _matrix_op("triu", TriuBackward0)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A square matrix with a 1-D input on diagonal `diagonal`, or a 2-D input's diagonal."""
    if input.ndim == 1:
        size = input.shape[0] + abs(diagonal)
        return DiagEmbedBackward0.apply(input, shape=(size, size), offset=int(diagonal))
    if input.ndim == 2:
        return DiagonalBackward0_copy.apply(input, offset=int(diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


FUNCTIONS = {"tril": tril, "triu": triu, "diag": diag}
