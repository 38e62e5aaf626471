"""Dropout layers: `Dropout` zeroes elements with probability p while training, scaling the rest
by 1/(1-p); `Dropout1d/2d/3d` zero whole channels; the alpha forms keep SELU's statistics."""

from __future__ import annotations

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .input_checks import expect_tensor
from .module import Module


class _DropoutNd(Module):
    """p and inplace, checked as PyTorch does."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    _function = "dropout"
    _honours_inplace = True  # PyTorch's alpha dropout layers keep `inplace` but never use it

    def forward(self, input: Tensor) -> Tensor:
        """The dropout function of the layer, with its p, inplace and the training flag."""
        expect_tensor(self, input)
        function = getattr(F, self._function)
        if self.inplace and self._honours_inplace:
            return function(input, self.p, self.training, inplace=True)
        return function(input, self.p, self.training)

    def extra_repr(self) -> str:
        """p and inplace."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Randomly zero elements while training; the identity in eval mode."""


class Dropout1d(_DropoutNd):
    """Randomly zero whole channels of (N, C, L) or (C, L) input while training."""

    _function = "dropout1d"


class Dropout2d(_DropoutNd):
    """Randomly zero whole channels of (N, C, H, W) input while training."""

    _function = "dropout2d"


class Dropout3d(_DropoutNd):
    """Randomly zero whole channels of (N, C, D, H, W) or (C, D, H, W) input while training."""

    _function = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance."""

    _function = "alpha_dropout"
    _honours_inplace = False


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _function = "feature_alpha_dropout"
    _honours_inplace = False


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
