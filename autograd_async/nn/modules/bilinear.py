"""`Bilinear`: y = x1ᵀ A x2 + b, one matrix A per output feature."""

from __future__ import annotations

import math
from typing import Any

from ... import creation
from ...core.tensor import Tensor
from .. import init
from ..parameter import Parameter
from .input_checks import expect_tensor
from .module import Module


class Bilinear(Module):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(
            creation.empty(out_features, in1_features, in2_features, dtype=dtype, device=device)
        )
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: weight and bias U(-1/√in1, 1/√in1)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """The bilinear form of the two inputs, per output feature."""
        for name, x, size in (
            ("input1", input1, self.in1_features),
            ("input2", input2, self.in2_features),
        ):
            expect_tensor(self, x, name)
            if x.ndim == 0 or x.shape[-1] != size:
                raise RuntimeError(
                    f"Bilinear: {name} has shape {tuple(x.shape)}, expected (*, {size})"
                )
        if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
            raise RuntimeError(
                f"Bilinear: input1 and input2 must have the same batch dimensions, got "
                f"{tuple(input1.shape)} and {tuple(input2.shape)}"
            )
        batch = tuple(input1.shape[:-1])
        out, in1, in2 = self.out_features, self.in1_features, self.in2_features
        x1 = input1.reshape((-1, in1))
        x2 = input2.reshape((-1, in2))
        # (n, in1) @ (in1, out * in2): every output's x1ᵀ A, then the dot with x2 per output.
        left = (x1 @ self.weight.permute(1, 0, 2).reshape((in1, out * in2))).reshape((-1, out, in2))
        y = (left * x2.unsqueeze(1)).sum(-1)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(batch + (out,))

    def extra_repr(self) -> str:
        """The feature sizes and whether there is a bias."""
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


__all__ = ["Bilinear"]
