"""Distance layers: CosineSimilarity and PairwiseDistance."""

from __future__ import annotations

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .module import Module


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """cosine_similarity(x1, x2, dim, eps)."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """p-norm distance between rows of x1 and x2 (with eps added to the difference)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """pairwise_distance(x1, x2, p, eps, keepdim)."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


__all__ = ["CosineSimilarity", "PairwiseDistance"]
