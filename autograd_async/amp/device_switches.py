"""PyTorch's per-device autocast switches from before `device_type` arguments:
`is_autocast_cpu_enabled`, `set_autocast_cpu_enabled`, `get/set_autocast_cpu_dtype`,
`get/set_autocast_gpu_dtype`; each is the device-typed switch for "cpu" or "cuda"."""

from __future__ import annotations

import warnings
from typing import Any

from .autocast_mode import get_autocast_dtype, is_autocast_enabled, set_autocast_dtype
from .autocast_mode import set_autocast_enabled as _set_enabled


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def set_autocast_enabled(*args: Any) -> None:
    """`(device_type, enabled)`, or PyTorch's older `(enabled)` for cuda."""
    if len(args) == 1:
        _set_enabled("cuda", args[0])
        return
    device_type, enabled = args
    _set_enabled(device_type, enabled)


def is_autocast_cpu_enabled() -> bool:
    """Whether autocast is on for the cpu in this context."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Turn cpu autocast on or off in this context."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    _set_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> Any:
    """The cpu autocast dtype (bfloat16 unless set)."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Set the cpu autocast dtype in this context."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> Any:
    """The cuda autocast dtype (float16 unless set)."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: Any) -> None:
    """Set the cuda autocast dtype in this context."""
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


__all__ = [
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_enabled",
    "set_autocast_gpu_dtype",
]
