"""`embedding_bag`: sums, means or maxima of bags of embedding rows, without the rows' tensor.

A bag is a run of indices (a row of a 2-D input, or the span between two offsets of a 1-D one).
The looked-up rows are gathered straight into a (bags, longest bag, D) block, with the entries
past a bag's end and those at `padding_idx` pointing at an appended filler row (zeros, or -inf
for max), then reduced over the bag axis: two recorded ops, whose gradients scatter back into the
weight's rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import creation
from ..core.tensor import Tensor
from .elementwise import where
from .embedding import _renorm_rows
from .gather import index_select
from .shape import cat

MODES = ("sum", "mean", "max")


def _check_indices(input: Any) -> None:
    if not isinstance(input, Tensor) or input.dtype.kind not in "iu":
        kind = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {kind} instead (while checking arguments for "
            "embedding_bag)"
        )


def _bag_starts(input: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple:
    """Flat indices (numpy) and the [start, end) of each bag."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        bags, length = input.shape
        starts = list(range(0, bags * length, length))
        return starts, [s + length for s in starts]
    if input.ndim != 1:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}"
        )
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    points = [int(v) for v in offsets.tolist()]
    total = input.shape[0]
    if points and points[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {points[0]}"
        )
    if points and points[-1] > total:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {total} but got offsets[-1] "
            f"of {points[-1]}"
        )
    if include_last_offset:
        return points[:-1], points[1:]
    return points, [*points[1:], total]


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the rows of `weight` in each bag of indices: (bags, D)."""
    _check_indices(input)
    if mode not in MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub."
            )
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is "
                f"not None, then it must have the same shape as the input "
                f"({tuple(input.shape)})"
            )
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported")
    starts, ends = _bag_starts(input, offsets, include_last_offset)
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("padding_idx must be within num_embeddings")
        padding_idx %= rows
    flat = np.asarray(input.reshape(-1).tolist(), dtype=np.int64)
    for position, value in enumerate(flat.tolist()):
        if not 0 <= value < rows:
            raise RuntimeError(
                f"Index {position} of input takes value {value} which is not in the valid "
                f"range [0, {rows})"
            )
    if max_norm is not None:
        _renorm_rows(weight, input._data, max_norm, norm_type)
    bags = len(starts)
    longest = max([e - s for s, e in zip(starts, ends, strict=True)], default=0)
    filler_row = rows  # the appended row
    table = np.full((bags, max(longest, 1)), filler_row, dtype=np.int64)
    counts = np.zeros(bags, dtype=np.int64)
    positions = np.full((bags, max(longest, 1)), flat.size, dtype=np.int64)
    for bag, (start, end) in enumerate(zip(starts, ends, strict=True)):
        kept = [p for p in range(start, end) if flat[p] != padding_idx]
        table[bag, : len(kept)] = flat[kept]
        positions[bag, : len(kept)] = kept
        counts[bag] = len(kept)
    dim = weight.shape[1]
    filler_value = float("-inf") if mode == "max" else 0.0
    filler = creation.full((1, dim), filler_value, dtype=weight.dtype, device=weight.device)
    picked = index_select(cat([weight, filler], 0), 0, _on(table.reshape(-1), weight))
    picked = picked.reshape(bags, table.shape[1], dim)
    if per_sample_weights is not None:
        scale = cat(
            [
                per_sample_weights.reshape(-1),
                creation.zeros(1, dtype=per_sample_weights.dtype, device=per_sample_weights.device),
            ],
            0,
        )
        scale = index_select(scale, 0, _on(positions.reshape(-1), weight))
        picked = picked * scale.reshape(bags, table.shape[1], 1)
    if mode == "max":
        out = picked.amax(dim=1)
        empty = counts == 0
        if empty.any():  # an empty bag gives zeros, as PyTorch's
            out = where(_on(~empty, weight).reshape(bags, 1), out, 0.0)
        return out
    out = picked.sum(dim=1)
    if mode == "mean":
        out = out / _on(np.maximum(counts, 1).astype(np.float64), weight).to(weight.dtype)[:, None]
    return out


def _on(values: np.ndarray, like: Tensor) -> Tensor:
    return creation.tensor(values, device=like.device)
