"""Names `torch.nn.functional` keeps for old code: the deprecated upsample functions, the
in-place activations (`relu_`, `elu_`, ...), and the `__torch_function__` probes."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from ..core.op import require_tensor
from ..core.tensor import Tensor
from ..ops.activations import celu, elu, hardtanh, leaky_relu, selu
from ..ops.sampling import interpolate
from ..ops.thresholds import rrelu_, threshold_


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )


def upsample(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated: `interpolate`."""
    require_tensor("upsample", input)
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: `interpolate(mode="nearest")`."""
    require_tensor("upsample_nearest", input)
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: `interpolate(mode="bilinear", align_corners=True)`."""
    require_tensor("upsample_bilinear", input)
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def relu_(input: Tensor) -> Tensor:
    """relu in place."""
    require_tensor("relu_", input)
    return input.relu_()


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """elu in place."""
    require_tensor("elu_", input)
    return elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """celu in place."""
    require_tensor("celu_", input)
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """selu in place."""
    require_tensor("selu_", input)
    return selu(input, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """hardtanh in place."""
    require_tensor("hardtanh_", input)
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """leaky_relu in place."""
    require_tensor("leaky_relu_", input)
    return leaky_relu(input, negative_slope, inplace=True)


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raise AssertionError(message naming `arg_name`) unless `arg` is an int or a pair."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def _overrides(value: Any) -> bool:
    """Whether `value` brings its own `__torch_function__` (this library's Tensor has none)."""
    return not isinstance(value, Tensor) and hasattr(type(value), "__torch_function__")


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether any of `relevant_args` defines `__torch_function__`."""
    return any(_overrides(v) for v in relevant_args)


def has_torch_function_unary(obj: Any) -> bool:
    """Whether `obj` defines `__torch_function__`."""
    return _overrides(obj)


def has_torch_function_variadic(*args: Any) -> bool:
    """Whether any argument defines `__torch_function__`."""
    return any(_overrides(v) for v in args)


__all__ = [
    "assert_int_or_pair",
    "celu_",
    "elu_",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "hardtanh_",
    "leaky_relu_",
    "relu_",
    "rrelu_",
    "selu_",
    "threshold_",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]
