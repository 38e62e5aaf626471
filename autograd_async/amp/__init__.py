"""Automatic mixed precision, as `torch.amp`: `autocast` regions, `GradScaler`, and the
`custom_fwd` / `custom_bwd` decorators for custom Functions."""

from .autocast_mode import (
    autocast,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_available,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from .custom_functions import custom_bwd, custom_fwd
from .grad_scaler import GradScaler

__all__ = [
    "GradScaler",
    "autocast",
    "clear_autocast_cache",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_cpu_dtype",
    "get_autocast_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_available",
    "is_autocast_cpu_enabled",
    "is_autocast_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "set_autocast_gpu_dtype",
]
