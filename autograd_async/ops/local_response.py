"""Local response normalisation across channels: local_response_norm and CrossMapLRN2d's math.

local_response_norm is PyTorch's composition (an average pool of x**2 over a window of
channels), so values and gradients agree with it. cross_map_lrn2d follows the legacy
CrossMapLRN2d kernel, whose running window over channels is a fixed (C, C) 0/1 matrix: the
scale is one product with it.
"""

from __future__ import annotations

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .dual import xp_of
from .pooling import avg_pool2d, avg_pool3d
from .sampling import pad


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """x / (k + alpha * mean of x**2 over `size` neighbouring channels) ** beta."""
    require_tensor("local_response_norm", input)
    dim = input.ndim
    if dim < 3:
        # PyTorch's text, with the run of spaces its source leaves in it
        raise ValueError(
            f"Expected 3D or higher dimensionality{' ' * 26}input (got {dim} dimensions)"
        )
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def _channel_window(channels: int, size: int) -> np.ndarray:
    """(C, C): row c marks the squares the legacy kernel sums into channel c's scale.

    The kernel starts with the first pre_pad channels and then, per channel, adds the next one
    and drops the one pre_pad behind only once c > pre_pad; this matrix replays those steps.
    """
    pre_pad = int((size - 1) / 2 + 1)
    window = np.zeros((channels, channels))
    window[0, : min(pre_pad, channels)] = 1
    for c in range(1, channels):
        window[c] = window[c - 1]
        if c < channels - pre_pad + 1:
            window[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            window[c, c - pre_pad] -= 1
    return window


def cross_map_lrn2d(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """CrossMapLRN2d's normalisation of (N, C, H, W): x * (k + alpha / size * window sum of
    x**2) ** -beta."""
    require_tensor("CrossMapLRN2d", input)
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    channels = input.shape[1]
    xp = xp_of(input._data)
    window = Tensor._wrap(
        xp.asarray(_channel_window(channels, size), dtype=input.dtype), input.device
    )
    squares = input.mul(input).movedim(1, -1)
    scale = (squares @ window.T).movedim(-1, 1).mul(alpha / size).add(k)
    return input * scale.pow(-beta)
