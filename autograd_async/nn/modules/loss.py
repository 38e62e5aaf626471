"""Loss modules: `CrossEntropyLoss` and `MSELoss` (thin wrappers over `nn.functional`)."""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .input_checks import expect_tensor
from .module import Module

_REDUCTIONS = ("none", "mean", "sum")


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error between input and target."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """mse_loss(input, target, reduction)."""
        expect_tensor(self, input)
        expect_tensor(self, target, "target")
        if self.reduction == "mean":
            return F.mse_loss(input, target)
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross entropy between logits and class indices (or class probabilities)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """cross_entropy(input, target, ...) with this module's settings."""
        expect_tensor(self, input)
        expect_tensor(self, target, "target")
        # Only settings that differ from the defaults are passed on.
        options: dict[str, Any] = {}
        if self.weight is not None:
            options["weight"] = self.weight
        if self.ignore_index != -100:
            options["ignore_index"] = self.ignore_index
        if self.reduction != "mean":
            options["reduction"] = self.reduction
        if self.label_smoothing != 0.0:
            options["label_smoothing"] = self.label_smoothing
        return F.cross_entropy(input, target, **options)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss of target sequences under per-frame log
    probabilities (T, N, C)."""

    def __init__(
        self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False
    ) -> None:
        super().__init__(reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self, log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any
    ) -> Tensor:
        """ctc_loss with the layer's blank, reduction and zero_infinity."""
        return F.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )
