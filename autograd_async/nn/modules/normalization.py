"""`LayerNorm`: normalise over the trailing `normalized_shape` dims, then scale and shift."""

from __future__ import annotations

from typing import Any

from ... import creation
from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .. import init
from ..parameter import Parameter
from .input_checks import expect_tensor
from .module import Module


class LayerNorm(Module):
    """Layer normalisation (Ba et al.) with an optional elementwise affine transform."""

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(
                creation.empty(self.normalized_shape, dtype=dtype, device=device)
            )
            if bias:
                self.bias = Parameter(
                    creation.empty(self.normalized_shape, dtype=dtype, device=device)
                )
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight to ones, bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """Normalised input."""
        expect_tensor(self, input)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """Shape, eps, whether affine and whether there is a bias."""
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )
