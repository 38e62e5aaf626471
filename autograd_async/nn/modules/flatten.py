"""`Flatten`: merge a range of dimensions into one."""

from __future__ import annotations

import math

from ...tensor import Tensor
from .input_checks import expect_tensor
from .module import Module


class Flatten(Module):
    """Flatten dims start_dim..end_dim (default: all but the batch dimension)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        """input reshaped with dims start_dim..end_dim merged."""
        expect_tensor(self, input)
        shape = tuple(input.shape)
        if not shape:
            return input.reshape((1,))
        start = self.start_dim % len(shape)
        end = self.end_dim % len(shape)
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        merged = math.prod(shape[start : end + 1])
        return input.reshape(shape[:start] + (merged,) + shape[end + 1 :])

    def extra_repr(self) -> str:
        """The dimension range."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
