"""Modules over channels and pixels: PixelShuffle, PixelUnshuffle, ChannelShuffle, Softmin,
Softmax2d and RMSNorm, each its `nn.functional` form with PyTorch's constructor and repr."""

from __future__ import annotations

from typing import Any

from ... import creation
from ...core.tensor import Tensor
from ...ops.channel_rearrange import (
    channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
    rms_norm,
    softmin,
)
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .. import init
from ..parameter import Parameter
from .input_checks import expect_tensor
from .module import Module


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """pixel_shuffle(input, upscale_factor)."""
        expect_tensor(self, input)
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        """The factor."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """pixel_unshuffle(input, downscale_factor)."""
        expect_tensor(self, input)
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        """The factor."""
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of `groups` groups."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """channel_shuffle(input, groups)."""
        expect_tensor(self, input)
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        """The group count."""
        return f"groups={self.groups}"


class Softmin(Module):
    """softmax(-input) along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """softmin(input, dim)."""
        expect_tensor(self, input)
        return softmin(input, self.dim)

    def extra_repr(self) -> str:
        """The dim."""
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels at every location of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        """softmax over dim -3."""
        expect_tensor(self, input)
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing `normalized_shape` dims."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(
                creation.empty(self.normalized_shape, dtype=dtype, device=device)
            )
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        """rms_norm(input, normalized_shape, weight, eps)."""
        expect_tensor(self, input)
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """Shape, eps and whether affine."""
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
