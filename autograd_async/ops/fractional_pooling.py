"""Fractional max pooling (Graham, 2014) in 2 and 3 dims, with PyTorch's pseudo-random windows.

Each (sample, channel) plane draws one number u in [0, 1) per spatial dim (`_random_samples`);
window i starts at int((i + u) * alpha) - int(u * alpha), alpha = (size - k) / (out - 1), the
last window ending at the input's end, computed in the input's dtype as PyTorch's kernel does.
The max of each window and its index come from `pooling.max_over_windows`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import creation
from ..core.op import require_kernel_dtype, require_tensor
from ..core.tensor import Tensor
from .conv import expand_param
from .pooling import max_over_windows

_AXIS_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _starts(samples: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """Window starts (N, C, out) from per-plane samples (N, C), PyTorch's `generate_intervals`."""
    starts = np.empty(samples.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = samples.dtype.type(size - k) / samples.dtype.type(out - 1)
        i = np.arange(out - 1, dtype=samples.dtype)
        shifted = ((i + samples[..., None]) * alpha).astype(np.int64)
        starts[..., :-1] = shifted - (samples * alpha).astype(np.int64)[..., None]
    if out > 0:
        starts[..., -1] = size - k
    return starts


def _fractional_max_pool(
    input: Tensor,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    return_indices: bool,
    samples: Tensor | None,
    dims: int,
) -> Any:
    name = f"fractional_max_pool{dims}d"
    require_tensor(name, input)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, list | tuple) else (output_ratio,) * dims
        if len(ratio) > dims:
            raise ValueError(
                f"{name} requires output_ratio to either be a single Int or tuple of Ints."
            )
        ratio = tuple(ratio) * dims if len(ratio) == 1 else tuple(ratio)
        output_size = [int(input.shape[-dims + i] * ratio[i]) for i in range(dims)]
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: {list(input.shape)}"
        )
    require_kernel_dtype(f"{name}_out_frame", input)
    kernel = expand_param(kernel_size, dims, "kernel_size", name)
    out = expand_param(output_size, dims, "output_size", name)
    x = input if input.ndim == dims + 2 else input.unsqueeze(0)
    size = tuple(x.shape[2:])
    where = f"{name}()" if dims == 2 else f"{name}_out()"
    for axis, n, o, k in zip(_AXIS_NAMES[dims], size, out, kernel):
        if o + k - 1 > n:
            raise RuntimeError(f"{where}: pool {axis} {k} too large relative to input {axis} {n}")
    if samples is None:
        samples = creation.rand((x.shape[0], x.shape[1], dims), dtype=x.dtype, device=x.device)
    if samples.shape[1] != x.shape[1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.ndim != 3 or samples.shape[0] != x.shape[0] or samples.shape[2] != dims:
        raise RuntimeError(
            f"Expect _random_samples to be of shape {[x.shape[0], x.shape[1], dims]}, but got "
            f"{list(samples.shape)}"
        )
    drawn = np.asarray(samples.detach().cpu().__array__(), dtype=x.dtype)
    # PyTorch's 2-d kernel reads a plane's first sample for the width, its second for the
    # height; the 3-d kernel reads them in order (time, height, width).
    order = (1, 0) if dims == 2 else (0, 1, 2)
    positions = [
        _starts(drawn[..., order[i]], size[i], out[i], kernel[i])[..., None] + np.arange(kernel[i])
        for i in range(dims)
    ]
    result, indices = max_over_windows(x, positions, out)
    if input.ndim == dims + 1:
        result, indices = result.squeeze(0), indices[0]
    if not return_indices:
        return result
    return result, Tensor._wrap(indices, x.device)


def fractional_max_pool2d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """Max over pseudo-random windows of (N, C, H, W) that shrink it to `output_size`."""
    return _fractional_max_pool(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2
    )


def fractional_max_pool3d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """Max over pseudo-random windows of (N, C, T, H, W) that shrink it to `output_size`."""
    return _fractional_max_pool(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3
    )


def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """`fractional_max_pool2d` with its indices."""
    return _fractional_max_pool(
        input, kernel_size, output_size, output_ratio, True, _random_samples, 2
    )


def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """`fractional_max_pool3d` with its indices."""
    return _fractional_max_pool(
        input, kernel_size, output_size, output_ratio, True, _random_samples, 3
    )
