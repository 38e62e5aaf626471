"""More activation modules, each a thin wrapper over `nn.functional` with PyTorch's constructor:
SiLU, LeakyReLU, ELU, SELU, CELU, Softplus, Mish, Hardtanh, ReLU6, Hardsigmoid, Hardswish,
LogSigmoid, Softsign, Tanhshrink, GLU, PReLU."""

from __future__ import annotations

from typing import Any

from ... import creation
from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from ..init import constant_
from ..parameter import Parameter
from .module import Module


class _Inplace(Module):
    """An activation with only PyTorch's `inplace` flag."""

    _function: Any = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The activation of `input`."""
        return type(self)._function(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """'inplace=True' when in place."""
        return "inplace=True" if self.inplace else ""


class _Plain(Module):
    """An activation without settings."""

    _function: Any = None

    def forward(self, input: Tensor) -> Tensor:
        """The activation of `input`."""
        return type(self)._function(input)


class SiLU(_Inplace):
    """x * sigmoid(x)."""

    _function = staticmethod(F.silu)


class SELU(_Inplace):
    """scale * elu(x, alpha) with the self-normalising constants."""

    _function = staticmethod(F.selu)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    _function = staticmethod(F.mish)


class ReLU6(_Inplace):
    """min(max(0, x), 6)."""

    _function = staticmethod(F.relu6)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""

    _function = staticmethod(F.hardsigmoid)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""

    _function = staticmethod(F.hardswish)


class LogSigmoid(_Plain):
    """log(sigmoid(x))."""

    _function = staticmethod(F.logsigmoid)


class Softsign(_Plain):
    """x / (1 + |x|)."""

    _function = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    """x - tanh(x)."""

    _function = staticmethod(F.tanhshrink)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """leaky_relu(input, negative_slope)."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        """The slope, and whether in place."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """elu(input, alpha)."""
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        """alpha, and whether in place."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, input: Tensor) -> Tensor:
        """celu(input, alpha)."""
        return F.celu(input, self.alpha, self.inplace)


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above `threshold`."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """softplus(input, beta, threshold)."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        """beta and threshold."""
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """hardtanh(input, min_val, max_val)."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        """The bounds, and whether in place."""
        inplace = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace}"


class GLU(Module):
    """a * sigmoid(b) for the halves a, b of the input along `dim`."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """glu(input, dim)."""
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        """The dimension."""
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, else a * x, with a learnable `a` shared or one per channel (dim 1)."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(creation.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope set to `init`."""
        constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """prelu(input, weight)."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        """How many slopes."""
        return f"num_parameters={self.num_parameters}"
