"""Pooling layers: max, average and adaptive pooling in one, two and three dimensions."""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .conv import check_layer_input
from .module import Module


def _single(value: Any) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


class _Pool(Module):
    _dims = 2

    def _check(self, input: Any) -> None:
        n = self._dims
        shape = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}[n]
        check_layer_input(self, input, (n + 1, n + 2), shape)


class _MaxPool(_Pool):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        """The maximum of each window (and, with return_indices, where it was)."""
        self._check(input)
        return getattr(F, f"max_pool{self._dims}d")(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPool):
    """Max pooling over (N, C, L) or (C, L) input."""

    _dims = 1


class MaxPool2d(_MaxPool):
    """Max pooling over (N, C, H, W) or (C, H, W) input."""

    _dims = 2


class MaxPool3d(_MaxPool):
    """Max pooling over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3


class AvgPool1d(_Pool):
    """Average pooling over (N, C, L) or (C, L) input."""

    _dims = 1

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        # PyTorch keeps AvgPool1d's sizes as 1-tuples (and prints them so).
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        self._check(input)
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_Pool):
    """Average pooling over (N, C, H, W) or (C, H, W) input."""

    _dims = 2

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        self._check(input)
        return getattr(F, f"avg_pool{self._dims}d")(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """Average pooling over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3


class _Adaptive(_Pool):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        """The output size."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling to a fixed output length."""

    _dims = 1

    def forward(self, input: Tensor) -> Tensor:
        """The input averaged over windows that tile it into `output_size`."""
        self._check(input)
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_Adaptive):
    """Average pooling to a fixed output height and width."""

    _dims = 2

    def forward(self, input: Tensor) -> Tensor:
        """The input averaged over windows that tile it into `output_size`."""
        self._check(input)
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling to a fixed output depth, height and width."""

    _dims = 3

    def forward(self, input: Tensor) -> Tensor:
        """The input averaged over windows that tile it into `output_size`."""
        self._check(input)
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        """The maximum over windows that tile the input into `output_size`."""
        self._check(input)
        pool = getattr(F, f"adaptive_max_pool{self._dims}d")
        return pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max pooling to a fixed output length."""

    _dims = 1


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max pooling to a fixed output height and width."""

    _dims = 2


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Max pooling to a fixed output depth, height and width."""

    _dims = 3


__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
]
