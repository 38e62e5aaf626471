"""Output sizes of the default functions, known from their inputs before they run.

A worker refuses a call whose outputs would not fit in its memory budget before it computes
anything (`MemoryBudget.check`). Each estimator takes the call's positional arguments (arrays
where tensors were sent) and keyword arguments, and returns the bytes of the outputs. Arguments
it cannot size (shapes that do not broadcast, a wrong count) give 0: the function itself then
raises its own error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["OutputSize", "broadcast_nbytes", "elementwise_nbytes", "matmul_nbytes", "matmul_shape"]

# (positional args, keyword args) -> bytes of the outputs
OutputSize = Callable[[Sequence[Any], dict[str, Any]], int]


def _arrays(args: Sequence[Any]) -> list[np.ndarray]:
    return [a for a in args if isinstance(a, np.ndarray)]


def _float_itemsize(arrays: Sequence[np.ndarray]) -> int:
    # An op on integers may give the default float (float32): count at least 4 bytes an item
    # (the widest input's itemsize is its result's, for the dtypes tensors have).
    return max(4, *(a.itemsize for a in arrays))


def broadcast_nbytes(args: Sequence[Any], kwargs: dict[str, Any]) -> int:
    """Bytes of an elementwise binary op's output: the inputs' broadcast shape."""
    arrays = _arrays(args)
    if not arrays:
        return 0
    shapes = {a.shape for a in arrays}
    if len(shapes) == 1:  # the common case, at a set's cost
        (shape,) = shapes
    else:
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            return 0
    return math.prod(shape) * _float_itemsize(arrays)


def elementwise_nbytes(args: Sequence[Any], kwargs: dict[str, Any]) -> int:
    """Bytes of an elementwise unary op's output: its input's shape."""
    arrays = _arrays(args)
    return arrays[0].size * _float_itemsize(arrays[:1]) if arrays else 0


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """The shape of `a @ b` (NumPy's and PyTorch's rule), or None when they do not match."""
    if not a or not b:
        return None
    left = (1, *a) if len(a) == 1 else tuple(a)
    right = (*b, 1) if len(b) == 1 else tuple(b)
    if left[-1] != right[-2]:
        return None
    try:
        batch = np.broadcast_shapes(left[:-2], right[:-2])
    except ValueError:
        return None
    rows = () if len(a) == 1 else (left[-2],)
    cols = () if len(b) == 1 else (right[-1],)
    return (*batch, *rows, *cols)


def matmul_nbytes(args: Sequence[Any], kwargs: dict[str, Any]) -> int:
    """Bytes of `a @ b` (an outer product when a is (n, 1) and b is (1, m))."""
    arrays = _arrays(args)
    if len(arrays) != 2:
        return 0
    shape = matmul_shape(arrays[0].shape, arrays[1].shape)
    return 0 if shape is None else math.prod(shape) * _float_itemsize(arrays)
