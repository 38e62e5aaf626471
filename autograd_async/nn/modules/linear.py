"""`Linear` (y = x Wᵀ + b, PyTorch's initialisation) and `Identity`."""

from __future__ import annotations

import math
from typing import Any

from ... import creation
from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .. import init
from ..parameter import Parameter
from .input_checks import expect_tensor
from .module import Module


class Identity(Module):
    """Returns its input unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """The input itself."""
        return input


class Linear(Module):
    """y = x Wᵀ + b with W of shape (out_features, in_features)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(
            creation.empty(out_features, in_features, dtype=dtype, device=device)
        )
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: weight kaiming_uniform(a=√5), bias U(-1/√fan_in, 1/√fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        """input @ weight.T + bias."""
        expect_tensor(self, input)
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        """in/out features and whether there is a bias."""
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )
