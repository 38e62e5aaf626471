"""Normalisation: batch_norm, instance_norm, group_norm, layer_norm.

Batch norm in training mode is one node (`ops.batch_norm`), and so is layer norm of a floating
input (`ops.layer_norm`); the others, and batch norm with running statistics, are built from
differentiable ops (mean, subtraction, a reciprocal square root, products), so gradients of every
order come from the ops' own rules. Batch and instance
norm update the running statistics in place, outside the graph, as PyTorch does (the variance
with Bessel's correction).
"""

from __future__ import annotations

import math
from typing import Any

from ..core.op import require_kernel_dtype, require_tensor
from ..core.tensor import Tensor
from ..dtypes import float32, float64
from ..grad_mode import no_grad
from .batch_norm import fused_batch_norm
from .layer_norm import fused_layer_norm


def _standardize(x: Tensor, dims: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(x - mean) / sqrt(var + eps) over `dims` (biased variance), with the mean and variance."""
    mean = x.mean(dim=dims, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dim=dims, keepdim=True)
    return centred * (var + eps) ** -0.5, mean, var


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    """(1, C, 1, ...): a per-channel vector broadcast over (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _affine(out: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple) -> Tensor:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _check_channel_vector(t: Tensor | None, name: str, channels: int) -> None:
    if t is not None and t.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def _update_running(running: Tensor | None, batch: Tensor, momentum: float) -> None:
    """running = (1 - momentum) * running + momentum * batch, in place and off the graph."""
    if running is None:
        return
    with no_grad():
        running.mul_(1 - momentum).add_(batch.detach().reshape(running.shape) * momentum)


def _update_running_array(running: Tensor | None, batch: Any, momentum: float) -> None:
    """The running statistic moved towards a batch statistic (an array), in place."""
    if running is None:
        return
    with no_grad():
        running._data *= 1 - momentum
        running._data += batch.reshape(running._data.shape).astype(running.dtype) * momentum
        running._bump_version()


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of (N, C, *) by batch statistics (training) or running ones."""
    require_tensor("batch_norm", input)
    require_kernel_dtype("batch_norm", input)
    channels = input.shape[1] if input.ndim > 1 else 0
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_channel_vector(t, name, channels)
    if input.ndim < 2:
        raise RuntimeError(
            f"batch_norm: expected an input of at least 2 dims (N, C, *), but got input of size "
            f"{list(input.shape)}"
        )
    shape = _channel_shape(input)
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        count = math.prod(input.shape[d] for d in dims)
        if count <= 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)}"
            )
        out, mean, var = fused_batch_norm(input, weight, bias, eps)
        _update_running_array(running_mean, mean, momentum)
        _update_running_array(running_var, var * (count / (count - 1)), momentum)
        return out
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        scale = (running_var.detach().reshape(shape) + eps) ** -0.5
        out = (input - running_mean.detach().reshape(shape)) * scale
    return _affine(out, weight, bias, shape)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of each sample of (N, C, *spatial) over its spatial dims."""
    require_tensor("instance_norm", input)
    require_kernel_dtype("batch_norm", input)
    if input.ndim < 3:
        raise ValueError(
            "instance_norm: expected an input of at least 3 dims (N, C, *spatial), but got "
            f"input of size {list(input.shape)}"
        )
    channels = input.shape[1]
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_channel_vector(t, name, channels)
    shape = _channel_shape(input)
    dims = tuple(range(2, input.ndim))
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    count = math.prod(input.shape[2:])
    if count <= 1:
        raise ValueError(
            "Expected more than 1 spatial element when training, got input size "
            f"{list(input.shape)}"
        )
    out, mean, var = _standardize(input, dims, eps)
    _update_running(running_mean, mean.mean(dim=0), momentum)
    _update_running(running_var, (var * (count / (count - 1))).mean(dim=0), momentum)
    return _affine(out, weight, bias, shape)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise (N, C, *) over groups of C / num_groups channels (and all spatial dims)."""
    require_tensor("group_norm", input)
    require_kernel_dtype("GroupNormKernelImpl", input)
    if input.ndim < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    channels = input.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        _check_channel_vector(t, name, channels)
    grouped = input.reshape((input.shape[0], num_groups, -1))
    out, _, _ = _standardize(grouped, (2,), eps)
    return _affine(out.reshape(input.shape), weight, bias, _channel_shape(input))


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing `normalized_shape` dims, then scale and shift elementwise."""
    require_tensor("layer_norm", input)
    require_kernel_dtype("LayerNormKernelImpl", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if input.ndim < n or tuple(input.shape[input.ndim - n :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(t.shape)} and normalized_shape = {list(shape)}"
            )
    if _fusable(input, weight, bias, shape):
        return fused_layer_norm(input, weight, bias, shape, eps)
    out, _, _ = _standardize(input, tuple(range(input.ndim - n, input.ndim)), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _fusable(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...]
) -> bool:
    """Whether the one-node layer norm applies: a float32 or float64 input (its row sums are
    matrix products, which NumPy accumulates in the input's precision), parameters of its dtype
    and device, no empty dims (composed ops keep PyTorch's promotions and nan for those)."""
    if input.dtype not in (float32, float64) or input.numel() == 0 or math.prod(shape) == 0:
        return False
    return all(
        t is None or (t.dtype == input.dtype and t.device is input.device) for t in (weight, bias)
    )


FUNCTIONS: dict[str, Any] = {}  # torch has these as functions, not Tensor methods
