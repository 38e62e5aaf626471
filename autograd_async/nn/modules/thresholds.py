"""Threshold-shaped activation layers: Threshold, Hardshrink, Softshrink and RReLU."""

from __future__ import annotations

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .input_checks import expect_tensor
from .module import Module


class Threshold(Module):
    """x where x > threshold, else `value`."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """threshold(input, threshold, value)."""
        expect_tensor(self, input)
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        inplace = ", inplace=True" if self.inplace else ""
        return f"threshold={self.threshold}, value={self.value}{inplace}"


class Hardshrink(Module):
    """x outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """hardshrink(input, lambd)."""
        expect_tensor(self, input)
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        """lambd."""
        return f"{self.lambd}"


class Softshrink(Module):
    """x shrunk toward 0 by lambd, 0 within [-lambd, lambd]."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """softshrink(input, lambd)."""
        expect_tensor(self, input)
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        """lambd."""
        return str(self.lambd)


class RReLU(Module):
    """Leaky ReLU with a random negative slope from U(lower, upper) while training."""

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """rrelu(input, lower, upper, training)."""
        expect_tensor(self, input)
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        inplace = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace}"


__all__ = ["Hardshrink", "RReLU", "Softshrink", "Threshold"]
