"""MaxUnpool1d/2d/3d: max pooling's values back at their indices, zeros elsewhere."""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from ...ops.conv import expand_param
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .module import Module


class _MaxUnpoolNd(Module):
    _dims = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        name, n = type(self).__name__, self._dims
        self.kernel_size = expand_param(kernel_size, n, "kernel_size", name)
        self.stride = expand_param(stride if stride is not None else kernel_size, n, "stride", name)
        self.padding = expand_param(padding, n, "padding", name)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """max_unpool of `input` at `indices` (from the matching max pool)."""
        return getattr(F, f"max_unpool{self._dims}d")(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of MaxPool1d."""

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of MaxPool2d."""

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of MaxPool3d."""

    _dims = 3


__all__ = ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
