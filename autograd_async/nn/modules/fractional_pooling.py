"""FractionalMaxPool2d/3d: max pooling over pseudo-random windows to a size or a ratio."""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from ...ops.conv import expand_param
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .module import Module


class _FractionalMaxPoolNd(Module):
    _dims = 2

    def __init__(
        self,
        kernel_size: Any,
        output_size: Any = None,
        output_ratio: Any = None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        name, n = type(self).__name__, self._dims

        def expand(value: Any) -> tuple:
            return tuple(value) if isinstance(value, list | tuple) else (value,) * n

        self.kernel_size = expand_param(kernel_size, n, "kernel_size", name)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = expand(output_size) if output_size is not None else None
        self.output_ratio = expand(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        """fractional_max_pool of the input (and its indices when asked)."""
        return getattr(F, f"fractional_max_pool{self._dims}d")(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, H, W) or (C, H, W)."""

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W)."""

    _dims = 3


__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]
