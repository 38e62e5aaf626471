"""`Dropout`: zero elements with probability p while training, scaling the rest by 1/(1-p)."""

from __future__ import annotations

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .input_checks import expect_tensor
from .module import Module


class Dropout(Module):
    """Randomly zero elements while training; the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """dropout(input, p, training)."""
        expect_tensor(self, input)
        if self.inplace:
            return F.dropout(input, self.p, self.training, inplace=True)
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        """p and inplace."""
        return f"p={self.p}, inplace={self.inplace}"
