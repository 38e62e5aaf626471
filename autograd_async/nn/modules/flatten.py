"""`Flatten`: merge a range of dimensions into one."""

from __future__ import annotations

import math

from ...core.tensor import Tensor
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


class Unflatten(Module):
    """Split dimension `dim` into `unflattened_size` (the inverse of `Flatten`)."""

    def __init__(self, dim: int, unflattened_size: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument type {type(dim).__name__} for dim: expected int")
        if not isinstance(unflattened_size, tuple | list) or not all(
            isinstance(n, int) for n in unflattened_size
        ):
            raise TypeError(
                f"unflattened_size must be a tuple or list of ints, but found {unflattened_size!r}"
            )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        """input reshaped with dimension `dim` split into `unflattened_size`."""
        shape = tuple(input.shape)
        if not -len(shape) <= self.dim < len(shape):
            raise IndexError(
                f"Unflatten: dimension {self.dim} is out of range for an input of shape {shape}"
            )
        dim = self.dim % len(shape)
        sizes = list(self.unflattened_size)
        if sizes.count(-1) > 1:
            raise RuntimeError("Unflatten: only one dimension can be inferred (-1)")
        known = math.prod(n for n in sizes if n != -1)
        if -1 in sizes:
            if known == 0 or shape[dim] % known:
                raise RuntimeError(
                    f"Unflatten: cannot infer a size from {shape[dim]} and {self.unflattened_size}"
                )
            sizes[sizes.index(-1)] = shape[dim] // known
        elif known != shape[dim]:
            raise RuntimeError(
                f"unflatten: Provided sizes {self.unflattened_size} don't multiply up to the size "
                f"of dim {self.dim} ({shape[dim]}) in the input tensor"
            )
        return input.reshape(shape[:dim] + tuple(sizes) + shape[dim + 1 :])

    def extra_repr(self) -> str:
        """The dimension and its new sizes."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
