"""LocalResponseNorm and the legacy CrossMapLRN2d: normalisation across nearby channels."""

from __future__ import annotations

from ...core.tensor import Tensor
from ...ops.local_response import cross_map_lrn2d
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .module import Module


class _ChannelWindowNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        """PyTorch's summary."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_ChannelWindowNorm):
    """Each element over (k + alpha * mean square of `size` neighbouring channels) ** beta."""

    def forward(self, input: Tensor) -> Tensor:
        """local_response_norm(input, size, alpha, beta, k)."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_ChannelWindowNorm):
    """The legacy cross-channel normalisation of (N, C, H, W) input."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        """The legacy kernel's normalisation."""
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)


__all__ = ["CrossMapLRN2d", "LocalResponseNorm"]
