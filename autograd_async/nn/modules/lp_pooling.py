"""LPPool1d/2d/3d: the p-norm of each sliding window."""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .module import Module


class _LPPoolNd(Module):
    _dims = 2

    def __init__(
        self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
    ) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """lp_pool of the input with the layer's settings."""
        return getattr(F, f"lp_pool{self._dims}d")(
            input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode
        )

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L)."""

    _dims = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W)."""

    _dims = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (N, C, D, H, W)."""

    _dims = 3


__all__ = ["LPPool1d", "LPPool2d", "LPPool3d"]
