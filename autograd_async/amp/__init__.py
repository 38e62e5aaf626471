"""Automatic mixed precision, as `torch.amp`: `autocast` regions and `GradScaler`."""

from .autocast_mode import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = [
    "GradScaler",
    "autocast",
    "clear_autocast_cache",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]
