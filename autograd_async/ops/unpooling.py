"""max_unpool1d/2d/3d: max pooling's values put back at their indices, zeros elsewhere.

One node for every dimension count: the values of each (N, C) plane are written at their flat
indices within the output plane. Its gradient reads the output's gradient at those indices (a
gather), as PyTorch's does; where indices repeat, the forward keeps the last value written.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.op import Op, require_tensor, torch_type_name
from ..core.tensor import Tensor
from .conv import expand_param
from .dual import xp_of
from .plane_gather import GatherBackward0, gather_planes


class MaxUnpoolBackward0(Op):
    """Planes (B, P) written at `index` (B, P) into zeros (B, size)."""

    __slots__ = ("_index",)
    op_name = "max_unpool"

    def forward(self, x: Any, *, index: Any, size: int) -> Any:
        self._index = index
        xp = xp_of(x)
        out = xp.zeros((x.shape[0], size), dtype=x.dtype)
        rows = xp.arange(x.shape[0]).reshape((-1, 1))
        out[rows, index] = x
        return out

    def backward(self, g: Any) -> tuple:
        if isinstance(g, Tensor):
            return (GatherBackward0.apply(g, self._index),)
        return (gather_planes(g, self._index),)


def _unpool_output_size(
    input: Tensor, kernel: tuple, stride: tuple, padding: tuple, output_size: Any
) -> list[int]:
    """PyTorch's `_unpool_output_size`: the size max pooling came from, or a checked request."""
    dims = len(kernel)
    default = [
        (input.shape[-dims + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(dims)
    ]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == dims + 2:
        output_size = output_size[2:]
    if len(output_size) != dims:
        raise ValueError(
            "output_size should be a sequence containing "
            f"{dims} or {dims + 2} elements, but it has a length of '{len(output_size)}'"
        )
    for d in range(dims):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(
                f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})'
            )
    return output_size


def _max_unpool(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    output_size: Any,
    dims: int,
) -> Tensor:
    name = f"max_unpool{dims}d"
    require_tensor(name, input)
    require_tensor(name, indices, "indices", 2)
    kernel = expand_param(kernel_size, dims, "kernel_size", name)
    stride = kernel if stride is None else expand_param(stride, dims, "stride", name)
    pads = expand_param(padding, dims, "padding", name)
    size = _unpool_output_size(input, kernel, stride, pads, output_size)
    # PyTorch's one-dimensional form is the two-dimensional kernel on (..., L, 1).
    kernel_dims = max(dims, 2)
    if input.ndim not in (kernel_dims + 1, kernel_dims + 2) and dims != 1:
        raise RuntimeError(
            f"Input to max_unpooling{dims}d should be a {dims + 1}d or {dims + 2}d Tensor, but "
            f"got a tensor with {input.ndim} dimensions."
        )
    if dims == 1 and input.ndim not in (2, 3):
        raise RuntimeError(
            f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
            f"{input.ndim + 1} dimensions."
        )
    if indices.dtype != np.int64:
        raise RuntimeError(
            f"elements in indices should be type int64 but got: {torch_type_name(indices.dtype)}"
        )
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    plane = math.prod(size)
    index = indices._data.reshape((-1, math.prod(input.shape[-dims:])))
    if index.size:
        bad = (index < 0) | (index >= plane)
        if bool(bad.any()):
            first = int(index.reshape(-1)[int(bad.reshape(-1).argmax())])
            shown = list(size) + [1] if dims == 1 else list(size)
            raise RuntimeError(
                f"Found an invalid max index: {first} (output volumes are of size "
                f"{'x'.join(map(str, shown))})"
            )
    lead = tuple(input.shape[: input.ndim - dims])
    planes = input.reshape((math.prod(lead), -1))
    out = MaxUnpoolBackward0.apply(planes, index=index, size=plane)
    return out.reshape(lead + tuple(size))


def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """The inverse of max_pool1d: values at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """The inverse of max_pool2d: values at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    """The inverse of max_pool3d: values at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
