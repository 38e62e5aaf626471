"""`fill_diagonal_`: one value written along the main diagonal of a matrix (or of a tensor whose
dimensions are all equal), continuing below a tall matrix's square part with `wrap=True`.

The diagonal's places are written as an indexed assignment, so the tensor's history and the
gradient (zero at the diagonal, the old one elsewhere) follow `x[index] = value`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..grad_mode import grad_enabled
from .inplace import VIEW_OF_LEAF_MESSAGE, setitem


def diagonal_places(shape: tuple[int, ...], wrap: bool) -> tuple[np.ndarray, ...]:
    """The index arrays of the diagonal's elements in a tensor of `shape`."""
    step = sum(math.prod(shape[k + 1 :]) for k in range(len(shape)))
    count = min(shape)
    if wrap and len(shape) == 2 and shape[0] > shape[1] + 1:
        count = -(-math.prod(shape) // step)  # continue every `step` elements to the end
    return np.unravel_index(np.arange(count) * step, shape)


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write `fill_value` along the main diagonal, in place."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if grad_enabled.get() and input._rg and input.grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_MESSAGE)  # PyTorch writes through a diagonal view
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    setitem(input, diagonal_places(tuple(input.shape), wrap), fill_value)
    return input


METHODS = {"fill_diagonal_": fill_diagonal_}
