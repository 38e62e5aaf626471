"""`nn.init`: fill weights in place (outside the graph) with PyTorch's fan and gain rules.

As in PyTorch, each fill is the tensor's own in-place fill (`uniform_`, `normal_`, `fill_`) run
under `no_grad`: samples are drawn on the tensor's device from the default generator (or the
`generator` given), and the version counter is bumped.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from .. import creation
from ..core.tensor import Tensor
from ..grad_mode import no_grad
from ..ops.dual import xp_of

_LINEAR_FNS = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: dims 1 and 0 times the receptive field size."""
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _checked(tensor: Any) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init expects a Tensor, got {type(tensor).__name__}")
    return tensor


def uniform_(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: creation.Generator | None = None
) -> Tensor:
    """Fill with samples from U(a, b)."""
    with no_grad():
        return _checked(tensor).uniform_(a, b, generator=generator)


def normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    generator: creation.Generator | None = None,
) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    with no_grad():
        return _checked(tensor).normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    with no_grad():
        return _checked(tensor).fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def _is_empty(tensor: Tensor) -> bool:
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def xavier_uniform_(
    tensor: Tensor, gain: float = 1.0, generator: creation.Generator | None = None
) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(
    tensor: Tensor, gain: float = 1.0, generator: creation.Generator | None = None
) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    """He's standard deviation: the nonlinearity's gain over sqrt(fan_in or fan_out)."""
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: creation.Generator | None = None,
) -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan)."""
    if _is_empty(tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: creation.Generator | None = None,
) -> Tensor:
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    if _is_empty(tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: creation.Generator | None = None,
) -> Tensor:
    """Fill with N(mean, std**2) samples truncated to [a, b] (inverse-CDF sampling)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
            "values may be incorrect.",
            stacklevel=2,
        )
    low, high = _norm_cdf((a - mean) / std), _norm_cdf((b - mean) / std)
    with no_grad():
        _checked(tensor).uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        tensor.copy_(tensor.erfinv())
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
    return tensor


def orthogonal_(
    tensor: Tensor, gain: float = 1.0, generator: creation.Generator | None = None
) -> Tensor:
    """Fill with a (semi-)orthogonal matrix: Q of the QR of a normal draw, scaled by `gain`."""
    if _checked(tensor).ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    draw = creation.empty(rows, cols, dtype=tensor.dtype, device=tensor.device)
    with no_grad():
        draw.normal_(0.0, 1.0, generator=generator)
        flat = draw._data if rows >= cols else draw._data.T
        xp = xp_of(flat)  # the device's own QR: the draw never leaves the device
        q, r = xp.linalg.qr(flat)
        q = q * xp.sign(xp.diagonal(r))
        if rows < cols:
            q = q.T
        tensor.copy_(Tensor._wrap(q.reshape(tensor.shape).astype(tensor.dtype), tensor.device))
        tensor.mul_(gain)
    return tensor


def sparse_(
    tensor: Tensor,
    sparsity: float,
    std: float = 0.01,
    generator: creation.Generator | None = None,
) -> Tensor:
    """Fill a 2-D tensor with N(0, std**2) samples and zero a `sparsity` share of each column."""
    if _checked(tensor).ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0.0, std, generator=generator)
        for col in range(cols):
            order = creation.randperm(rows, generator=generator, device=tensor.device)
            tensor[order[:zeros], col] = 0
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The identity of a convolution: a centred 1 for each kept channel (per group)."""
    sizes = _checked(tensor).shape
    if len(sizes) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    channels = min(per_group, sizes[1])
    centre = tuple(n // 2 for n in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(channels):
                tensor[(g * per_group + d, d, *centre)] = 1
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal)."""
    if _checked(tensor).ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(creation.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))
    return tensor


def _deprecated_alias(fill: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's old name of an init function (no trailing underscore), with its FutureWarning."""
    new_name = fill.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
            FutureWarning,
            stacklevel=2,
        )
        return fill(*args, **kwargs)

    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"Deprecated: use `nn.init.{new_name}`."
    return deprecated_init


uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]
