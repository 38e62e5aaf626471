"""`SyncBatchNorm`: batch normalisation whose statistics cover the batch of every rank.

In training each rank sums its inputs and their squares per channel; one all_reduce (a
differentiable one: its backward all-reduces the gradient) gives every rank the statistics of
the global batch, so N ranks with batch B normalise exactly as one process with batch N*B, in
forward and in backward. In eval mode, or in a group of one, it is plain batch normalisation.
"""

from __future__ import annotations

from typing import Any

from ... import creation
from ...autograd.function import Function
from ...core.tensor import Tensor
from ...distributed.collectives.api import all_reduce, resolve_group
from ...distributed.collectives.process_group import ReduceOp
from ...grad_mode import no_grad
from ...ops.shape import cat
from .batchnorm import _BatchNorm
from .input_checks import expect_tensor
from .module import Module

__all__ = ["SyncBatchNorm"]


class AllReduceSum(Function):
    """Sum over the ranks; the gradient of each rank's input is the sum of the ranks' gradients."""

    @staticmethod
    def forward(ctx: Any, tensor: Tensor, group: Any) -> Tensor:
        ctx.group = group
        ctx.waits_on_other_threads = True  # its backward waits for the other ranks: on a worker
        out = tensor.clone()
        all_reduce(out, ReduceOp.SUM, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        summed = grad.clone()
        all_reduce(summed, ReduceOp.SUM, group=ctx.group)
        return summed, None


class SyncBatchNorm(_BatchNorm):
    """PyTorch's `torch.nn.SyncBatchNorm` on this package's collectives."""

    _ranks = (2, 3, 4, 5)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def forward(self, input: Tensor) -> Tensor:
        """Normalise by the statistics of every rank's batch (training), else as BatchNorm."""
        expect_tensor(self, input)
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        self._check_channels(input)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        if not use_batch or resolve_group(self.process_group).size() == 1:
            return super().forward(input)
        factor = self._averaging_factor()
        dims = [0, *range(2, input.ndim)]
        count = input.numel() // input.shape[1]
        local = input.sum(dim=dims)
        squares = (input * input).sum(dim=dims)
        counts = creation.full((1,), float(count), dtype=local.dtype, device=local.device)
        stacked = AllReduceSum.apply(cat([local, squares, counts]), self.process_group)
        c = self.num_features
        total = stacked[2 * c]
        mean = stacked[:c] / total
        var = stacked[c : 2 * c] / total - mean * mean
        shape = (1, c, *([1] * (input.ndim - 2)))
        out = (input - mean.reshape(shape)) / (var.reshape(shape) + self.eps).sqrt()
        if self.affine:
            out = out * self.weight.reshape(shape) + self.bias.reshape(shape)
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                n = float(total.item())
                unbiased = var.detach() * (n / max(n - 1.0, 1.0))
                self.running_mean.mul_(1 - factor).add_(mean.detach() * factor)
                self.running_var.mul_(1 - factor).add_(unbiased * factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm holding its state."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = SyncBatchNorm(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.train(module.training)
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
