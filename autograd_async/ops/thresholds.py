"""nn.functional's piecewise activations that cut at a threshold: threshold, hardshrink,
softshrink and the randomised leaky ReLU (rrelu), with their `inplace` forms. threshold and
hardshrink run the ops of `aten_thresholds` (PyTorch's `ThresholdBackward0`,
`HardshrinkBackward0`); softshrink and training-mode rrelu are composed of masks and products so
that gradients of every order come from the nodes they are built of.

At the cut points they follow PyTorch's kernels: threshold keeps x only where x > threshold,
hardshrink zeroes [-lambd, lambd] inclusive, rrelu draws a slope for every x <= 0.
"""

from __future__ import annotations

import numpy as np

from .. import creation
from ..core.op import require_kernel_dtype, require_tensor, torch_type_name
from ..core.tensor import Tensor
from . import aten_thresholds
from .activations import leaky_relu
from .elementwise import where
from .inplace import _through_copy


def _cut(input: Tensor, limit: float, value: float, inplace: bool) -> Tensor:
    require_tensor("threshold_" if inplace else "threshold", input)

    def cut(x: Tensor) -> Tensor:
        return aten_thresholds.threshold(x, limit, value)

    return _through_copy(input, cut) if inplace else cut(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else `value` (integer tensors keep their dtype)."""
    return _cut(input, threshold, value, inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """`threshold` in place."""
    return _cut(input, threshold, value, inplace=True)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x outside [-lambd, lambd], 0 inside."""
    require_tensor("hardshrink", input)
    require_kernel_dtype("hardshrink_cpu", input)
    return aten_thresholds.hardshrink(input, lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    require_tensor("softshrink", input)
    require_kernel_dtype("softshrink_check", input)
    largest = float(np.finfo(input.dtype).max)
    if not 0 <= lambd <= largest:
        raise RuntimeError(
            f"lambda must be in range [0, {largest:g}] for input dtype "
            f"{torch_type_name(input.dtype)}, but found {lambd:g}"
        )
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0))


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training,
    and is (lower + upper) / 2 in eval mode."""
    require_tensor("rrelu", input)
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    require_kernel_dtype("leaky_relu_cpu", input)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    slopes = creation.empty(tuple(input.shape), dtype=input.dtype, device=input.device)
    slopes.uniform_(lower, upper)

    def leak(x: Tensor) -> Tensor:
        return where(x > 0, x, x * slopes)

    return _through_copy(input, leak) if inplace else leak(input)


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """`rrelu` in place."""
    require_tensor("rrelu_", input)
    return rrelu(input, lower, upper, training, inplace=True)
