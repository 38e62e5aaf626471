"""Convolution layers: `Conv1d/2d/3d` and `ConvTranspose1d/2d/3d`, with PyTorch's parameters,
initialisation, padding modes and `state_dict` keys."""

from __future__ import annotations

import math
from typing import Any

from ... import creation
from ...core.tensor import Tensor
from ...ops.conv import expand_param
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .. import init
from ..parameter import Parameter
from .input_checks import expect_tensor
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def check_layer_input(layer: Module, input: Any, ranks: tuple[int, ...], what: str) -> None:
    """Refuse a non-tensor or an input of the wrong rank, naming the layer and what it expects."""
    name = type(layer).__name__
    expect_tensor(layer, input)
    if input.ndim not in ranks:
        expected = " or ".join(f"{r}D" for r in ranks)
        raise RuntimeError(
            f"{name}: expected {expected} input ({what}), got {input.ndim}D input of shape "
            f"{tuple(input.shape)}"
        )


class _ConvNd(Module):
    """What convolutions and transposed convolutions share: sizes, parameters, init, repr."""

    _dims: int = 2
    _transposed: bool = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        output_padding: Any = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        layer, n = type(self).__name__, self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = expand_param(kernel_size, n, "kernel_size", layer)
        self.stride = expand_param(stride, n, "stride", layer)
        self.dilation = expand_param(dilation, n, "dilation", layer)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string '{padding}', should be one of ('valid', 'same')"
                )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding: Any = padding
        else:
            self.padding = expand_param(padding, n, "padding", layer)
        self.output_padding = expand_param(output_padding, n, "output_padding", layer)
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(creation.empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: weight kaiming_uniform(a=√5), bias U(-1/√fan_in, 1/√fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _check_input(self, input: Any) -> None:
        n = self._dims
        check_layer_input(
            self, input, (n + 1, n + 2), f"(N, C, {', '.join('LHW'[-n:] if n < 3 else 'DHW')})"
        )
        channels = input.shape[-n - 1]
        if channels != self.in_channels:
            raise RuntimeError(
                f"{type(self).__name__}({self.in_channels}, {self.out_channels}, ...): expected "
                f"input with {self.in_channels} channels, got {channels} channels (input of "
                f"shape {tuple(input.shape)})"
            )

    def extra_repr(self) -> str:
        """PyTorch's summary: channels, kernel and the settings that differ from the default."""
        n = self._dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        text += f", stride={self.stride}"
        if self.padding != (0,) * n:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class _Conv(_ConvNd):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device=device,
            dtype=dtype,
        )

    def _mode_padding(self) -> tuple[int, ...]:
        """F.pad's argument (last dim first) for a padding mode other than zeros."""
        if self.padding == "valid":
            return (0,) * (2 * self._dims)
        if self.padding == "same":
            pads = []
            for k, d in zip(self.kernel_size, self.dilation, strict=True):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
        else:
            pads = [(p, p) for p in self.padding]
        return tuple(p for pair in reversed(pads) for p in pair)

    def forward(self, input: Tensor) -> Tensor:
        """The convolution of the input with the layer's weight (and bias)."""
        self._check_input(input)
        conv = getattr(F, f"conv{self._dims}d")
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._mode_padding(), mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv1d(_Conv):
    """1-d convolution over (N, C, L) or (C, L) input."""

    _dims = 1


class Conv2d(_Conv):
    """2-d convolution over (N, C, H, W) or (C, H, W) input."""

    _dims = 2


class Conv3d(_Conv):
    """3-d convolution over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not accept a padding string")
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            output_padding,
            device=device,
            dtype=dtype,
        )

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output padding that makes the output `output_size` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        size = tuple(output_size)[-n:]
        if len(size) != n:
            raise ValueError(
                f"{type(self).__name__}: output_size must have {n} or {n + 2} elements "
                f"(got {len(tuple(output_size))})"
            )
        padding = []
        for i in range(n):
            smallest = (
                (input.shape[-n + i] - 1) * self.stride[i]
                - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1)
                + 1
            )
            largest = smallest + self.stride[i] - 1
            if not smallest <= size[i] <= largest:
                raise ValueError(
                    f"requested an output size of {list(size)}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {list(input.shape[-n:])})"
                )
            padding.append(size[i] - smallest)
        return tuple(padding)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """The transposed convolution (the gradient of a convolution with respect to its input)."""
        self._check_input(input)
        return getattr(F, f"conv_transpose{self._dims}d")(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution over (N, C, L) or (C, L) input."""

    _dims = 1


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution over (N, C, H, W) or (C, H, W) input."""

    _dims = 2


class ConvTranspose3d(_ConvTranspose):
    """3-d transposed convolution over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3


__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
