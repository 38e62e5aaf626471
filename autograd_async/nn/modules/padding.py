"""The padding modules: Zero, Constant, Reflection, Replication and Circular padding in 1, 2
and 3 dimensions, each `F.pad` with its mode and PyTorch's constructor and repr."""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .input_checks import expect_tensor
from .module import Module


def _widths(padding: Any, dims: int) -> tuple[int, ...]:
    """PyTorch's padding tuple: an int for every side, or one (before, after) pair per dim."""
    if isinstance(padding, int):
        return (padding,) * (2 * dims)
    padding = tuple(padding)
    if len(padding) != 2 * dims:
        raise ValueError(f"Padding must be an int or a {2 * dims}-tuple, got {padding}")
    return padding


class _PadNd(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _widths(padding, self.dims)

    def forward(self, input: Tensor) -> Tensor:
        """F.pad(input, padding, mode)."""
        expect_tensor(self, input)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        """The padding widths."""
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """F.pad(input, padding, 'constant', value)."""
        expect_tensor(self, input)
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        """The padding widths and the fill value."""
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant."""


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with a constant."""

    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with a constant."""

    dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding widths."""
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dims with zeros."""

    dims = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dims with zeros."""

    dims = 3


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge not repeated)."""

    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pad the last two dims with their reflection."""

    dims = 2


class ReflectionPad3d(ReflectionPad1d):
    """Pad the last three dims with their reflection."""

    dims = 3


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""

    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pad the last two dims by repeating their edges."""

    dims = 2


class ReplicationPad3d(ReplicationPad1d):
    """Pad the last three dims by repeating their edges."""

    dims = 3


class CircularPad1d(_PadNd):
    """Pad the last dim with its values wrapped around."""

    mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pad the last two dims with their values wrapped around."""

    dims = 2


class CircularPad3d(CircularPad1d):
    """Pad the last three dims with their values wrapped around."""

    dims = 3
