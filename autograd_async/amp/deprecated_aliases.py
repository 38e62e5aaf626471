"""The per-device spellings PyTorch keeps for old code, `torch.cuda.amp.autocast(...)`,
`torch.cpu.amp.autocast(...)`, `torch.cuda.amp.GradScaler(...)` and `torch.cuda.amp.custom_fwd`:
each works as the `amp` name it stands for, with PyTorch's FutureWarning saying which to use."""

from __future__ import annotations

import warnings
from typing import Any

from ..dtypes import BFLOAT16
from .autocast_mode import autocast
from .custom_functions import custom_bwd, custom_fwd
from .grad_scaler import GradScaler

_FLOAT16 = "float16"


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"`{old}` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3
    )


class CudaAutocast(autocast):
    """`amp.autocast("cuda", ...)` under its old name."""

    def __init__(
        self, enabled: bool = True, dtype: Any = _FLOAT16, cache_enabled: bool = True
    ) -> None:
        _warn("torch.cuda.amp.autocast(args...)", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def _again(self) -> autocast:  # the decorator's fresh region warns no more
        return autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled)


class CpuAutocast(autocast):
    """`amp.autocast("cpu", ...)` under its old name."""

    def __init__(
        self, enabled: bool = True, dtype: Any = BFLOAT16, cache_enabled: bool = True
    ) -> None:
        _warn("torch.cpu.amp.autocast(args...)", "torch.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def _again(self) -> autocast:
        return autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled)


def _old_scaler(device: str) -> type[GradScaler]:
    """`amp.GradScaler(device, ...)` under its old name `torch.<device>.amp.GradScaler`."""

    class OldGradScaler(GradScaler):
        __doc__ = f"`amp.GradScaler({device!r}, ...)` under its old name."

        def __init__(
            self,
            init_scale: float = 2.0**16,
            growth_factor: float = 2.0,
            backoff_factor: float = 0.5,
            growth_interval: int = 2000,
            enabled: bool = True,
        ) -> None:
            _warn(
                f"torch.{device}.amp.GradScaler(args...)",
                f"torch.amp.GradScaler('{device}', args...)",
            )
            super().__init__(
                device,
                init_scale=init_scale,
                growth_factor=growth_factor,
                backoff_factor=backoff_factor,
                growth_interval=growth_interval,
                enabled=enabled,
            )

    OldGradScaler.__name__ = OldGradScaler.__qualname__ = f"{device.capitalize()}GradScaler"
    return OldGradScaler


CudaGradScaler = _old_scaler("cuda")
CpuGradScaler = _old_scaler("cpu")


def cuda_custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """`amp.custom_fwd(..., device_type="cuda")` under its old name."""
    _warn("torch.cuda.amp.custom_fwd(args...)", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def cuda_custom_bwd(bwd: Any) -> Any:
    """`amp.custom_bwd(..., device_type="cuda")` under its old name."""
    _warn("torch.cuda.amp.custom_bwd(args...)", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return custom_bwd(bwd, device_type="cuda")
