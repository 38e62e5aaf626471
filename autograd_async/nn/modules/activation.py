"""Activation modules: ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax."""

from __future__ import annotations

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .input_checks import expect_tensor
from .module import Module


class ReLU(Module):
    """max(0, x), elementwise."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """relu(input)."""
        expect_tensor(self, input)
        return F.relu(input, inplace=True) if self.inplace else F.relu(input)

    def extra_repr(self) -> str:
        """'inplace=True' when in place."""
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x Φ(x), exact (`approximate='none'`) or with the tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """gelu(input)."""
        expect_tensor(self, input)
        if self.approximate == "none":
            return F.gelu(input)
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        """The approximation used."""
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x), elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """tanh(input)."""
        expect_tensor(self, input)
        return input.tanh()


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """sigmoid(input)."""
        expect_tensor(self, input)
        return input.sigmoid()


class Softmax(Module):
    """softmax along `dim`."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """softmax(input, dim)."""
        expect_tensor(self, input)
        return F.softmax(input, dim=self.dim)

    def extra_repr(self) -> str:
        """The dimension."""
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along `dim`, computed stably."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """log_softmax(input, dim)."""
        expect_tensor(self, input)
        return F.log_softmax(input, dim=self.dim)

    def extra_repr(self) -> str:
        """The dimension."""
        return f"dim={self.dim}"
