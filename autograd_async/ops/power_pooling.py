"""Power-average pooling, lp_pool1d/2d/3d: (sum of x**p over each window) ** (1/p).

PyTorch's composition, kept so that values and gradients agree with it: the average pool of
x**p times the window's size, its sign times relu of its magnitude, to the power 1/p; p = inf
is the max of |x|, p = -inf minus the max of -|x|.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .conv import expand_param
from .elementwise import relu
from .pooling import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d

_AVG = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}
_MAX = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}


def _lp_pool(
    input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool, dims: int
) -> Tensor:
    require_tensor(f"lp_pool{dims}d", input)
    kernel = expand_param(kernel_size, dims, "kernel_size", f"lp_pool{dims}d")
    if norm_type == math.inf:
        return _MAX[dims](input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -_MAX[dims](-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = _AVG[dims](input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    """The p-norm of each sliding window of (N, C, L)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(
    input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    """The p-norm of each sliding window of (N, C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    """The p-norm of each sliding window of (N, C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
