"""Lookups by integer index: `embedding` (one node, a scatter-add backward) and `one_hot`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .dual import mul_const, xp_of
from .plane_gather import ScatterAddBackward0, scatter_planes


class EmbeddingBackward0(Op):
    """Rows of `weight` (V, D) at integer `indices`; the gradient adds back into those rows.

    Rows at `padding_idx` get no gradient. With create_graph the gradient is a scatter-add node,
    whose own gradient gathers the rows again.
    """

    __slots__ = ("_flat", "_keep", "_rows")
    op_name = "embedding"

    def forward(self, weight: Any, indices: Any, padding_idx: int | None) -> Any:
        xp = xp_of(weight)
        self._rows = weight.shape
        dim = weight.shape[1]
        # The index of each output element in the flattened weight: one row of the gradient's
        # (1, V * D) plane per looked-up element.
        self._flat = (indices.reshape((-1, 1)) * dim + xp.arange(dim)).reshape((1, -1))
        self._keep = None
        if padding_idx is not None:
            self._keep = (indices != padding_idx)[..., None].astype(weight.dtype)
        return xp.take(weight, indices, axis=0)

    def backward(self, g: Any) -> tuple:
        if self._keep is not None:
            g = mul_const(g, self._keep)
        size = self._rows[0] * self._rows[1]
        flat = g.reshape((1, -1))
        if isinstance(g, Tensor):
            grad = ScatterAddBackward0.apply(flat, self._flat, size=size)
        else:
            grad = scatter_planes(flat, self._flat, size)
        return grad.reshape(self._rows), None


def _renorm_rows(weight: Tensor, indices: Any, max_norm: float, norm_type: float) -> None:
    """Scale the looked-up rows whose norm exceeds `max_norm` down to it, in place (no graph)."""
    data = weight._data
    xp = xp_of(data)
    rows = xp.unique(indices.reshape(-1))
    picked = data[rows]
    norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(data.dtype)
    data[rows] = picked * scale[:, None]
    weight._bump_version()


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`; padding_idx rows get no gradient."""
    if not isinstance(input, Tensor) or input.dtype.kind not in "iu":
        kind = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {kind} instead (while checking arguments for embedding)"
        )
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, but got {list(weight.shape)}")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise ValueError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
    indices = input._data
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= rows):
        raise IndexError(
            f"index out of range in self: embedding indices must be in [0, {rows}), got "
            f"values in [{int(indices.min())}, {int(indices.max())}]"
        )
    if max_norm is not None:
        _renorm_rows(weight, indices, max_norm, norm_type)
    return EmbeddingBackward0.apply(weight, indices, padding_idx=padding_idx)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors of the class indices in `tensor` (a trailing dim of num_classes)."""
    require_tensor("one_hot", tensor)
    if tensor.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor._data
    xp = xp_of(data)
    if data.size and int(data.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if not data.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    elif data.size and int(data.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (data[..., None] == xp.arange(num_classes)).astype(np.int64)
    return Tensor._wrap(out, tensor.device)


FUNCTIONS: dict[str, Any] = {}  # torch has these as functions, not Tensor methods
