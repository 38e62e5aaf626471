"""Rearrangements of channels and pixels, as one reshape-permute-reshape each: `pixel_shuffle`,
`pixel_unshuffle`, `channel_shuffle`; and `rms_norm`, `softmin` composed of recorded ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .nn_ops import softmax


def _at_least_3d(name: str, input: Tensor) -> None:
    require_tensor(name, input)
    if input.ndim < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): each channel block of r^2 becomes an r x r tile."""
    _at_least_3d("pixel_shuffle", input)
    r = upscale_factor
    *lead, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}"
        )
    n = len(lead)
    x = input.reshape(*lead, channels // (r * r), r, r, height, width)
    order = (*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.permute(*order).reshape(*lead, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle."""
    _at_least_3d("pixel_unshuffle", input)
    r = downscale_factor
    *lead, channels, height, width = input.shape
    for name, size, dim in (("height", height, -2), ("width", width, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({dim})={size} is not divisible by {r}"
            )
    n = len(lead)
    x = input.reshape(*lead, channels, height // r, r, width // r, r)
    order = (*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.permute(*order).reshape(*lead, channels * r * r, height // r, width // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g k, *) -> (N, k g, *): interleave the channels of `groups` groups."""
    require_tensor("channel_shuffle", input)
    if input.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {channels} channels and "
            f"{groups} groups."
        )
    x = input.reshape(batch, groups, channels // groups, *rest)
    return x.transpose(1, 2).reshape(batch, channels, *rest)


def rms_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """input / sqrt(mean(input^2 over the trailing normalized_shape dims) + eps), times weight."""
    require_tensor("rms_norm", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(shape)
    if tuple(input.shape[input.ndim - count :]) != shape or count > input.ndim:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(shape)}"
        )
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    dims = tuple(range(input.ndim - count, input.ndim))
    out = input * ((input * input).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def softmin(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None
) -> Tensor:
    """softmax(-input) along `dim`."""
    require_tensor("softmin", input)
    if dtype is not None:
        input = input.to(dtype=dtype)
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return softmax(-input, dim)


FUNCTIONS: dict[str, Any] = {}  # torch has these in nn.functional only
