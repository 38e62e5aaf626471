"""Batch, instance and group normalisation layers, with PyTorch's running statistics, momentum
(None for a cumulative average), `track_running_stats`, train/eval behaviour and buffers."""

from __future__ import annotations

from typing import Any

from ... import creation
from ...core.tensor import Tensor
from ...dtypes import int64
from ...grad_mode import no_grad
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .. import init
from ..parameter import Parameter
from .conv import check_layer_input
from .input_checks import expect_tensor
from .module import Module


class _NormBase(Module):
    """Affine parameters and running statistics, registered under PyTorch's names."""

    def __init__(
        self,
        num_features: int,
        eps: float,
        momentum: float | None,
        affine: bool,
        track_running_stats: bool,
        device: Any,
        dtype: Any,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(creation.empty(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(creation.empty(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer(
                "running_mean", creation.zeros(num_features, dtype=dtype, device=device)
            )
            self.register_buffer(
                "running_var", creation.ones(num_features, dtype=dtype, device=device)
            )
            self.register_buffer(
                "num_batches_tracked", creation.tensor(0, dtype=int64, device=device)
            )
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, no batches seen."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Running statistics reset; weight ones, bias zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _averaging_factor(self) -> float:
        """This batch's weight in the running statistics (PyTorch's exponential_average_factor)."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        return factor

    def _check_channels(self, input: Tensor) -> None:
        channels = input.shape[1] if input.ndim > 1 else None
        if channels != self.num_features:
            raise ValueError(
                f"{type(self).__name__}({self.num_features}): expected input with "
                f"{self.num_features} channels in dimension 1, got input of shape "
                f"{tuple(input.shape)}"
            )

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    _ranks: tuple[int, ...] = (4,)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias
        )

    def forward(self, input: Tensor) -> Tensor:
        """Normalise by the batch's statistics in training (updating the running ones), by the
        running statistics in eval mode (or the batch's, without running statistics)."""
        expect_tensor(self, input)
        if input.ndim not in self._ranks:
            expected = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(
                f"{type(self).__name__}: expected {expected} input (got {input.ndim}D input)"
            )
        self._check_channels(input)
        factor = self._averaging_factor()
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) input."""

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) input."""


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) input."""

    _ranks = (5,)


class _InstanceNorm(_NormBase):
    """Normalise each sample's channels over their spatial dims; optional affine and running
    stats."""

    _dims = 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias
        )

    def forward(self, input: Tensor) -> Tensor:
        """Instance-normalised input; input without the batch dim is one sample."""
        n = self._dims
        spatial = {1: "L", 2: "H, W", 3: "D, H, W"}[n]
        check_layer_input(self, input, (n + 1, n + 2), f"(N, C, {spatial}) or (C, {spatial})")
        unbatched = input.ndim == n + 1
        x = input.unsqueeze(0) if unbatched else input
        self._check_channels(x)
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            0.1 if self.momentum is None else self.momentum,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L) input."""

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W) input."""

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3


class GroupNorm(Module):
    """Normalise over groups of channels (and all spatial positions) per sample."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(creation.ones(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(creation.zeros(num_channels, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        """Group-normalised input."""
        expect_tensor(self, input)
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
]
