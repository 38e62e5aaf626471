"""Channel-wise and self-normalising dropout: dropout1d/2d/3d, alpha_dropout and
feature_alpha_dropout, as PyTorch's `_dropout_impl` computes them.

Each is a product with a random mask drawn once (plus, for the alpha forms, a shift), so the
gradient is the mask times the output's gradient, through the ordinary product node.
"""

from __future__ import annotations

import math
import warnings

from .. import creation
from ..core.op import require_tensor
from ..core.tensor import Tensor

# SELU's negative saturation value, -scale * alpha: where alpha dropout sends dropped elements.
_SELU_SATURATION = 1.7580993408473766


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input: Tensor, p: float, feature: bool) -> Tensor:
    """Ones kept with probability 1 - p: one draw per element, or per (sample, channel)."""
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    return creation.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)


def _dropout_impl(
    input: Tensor, p: float, training: bool, inplace: bool, *, feature: bool, alpha: bool
) -> Tensor:
    """PyTorch's `_dropout_impl`: the identity in eval mode, p = 0 or for empty input."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        out = input * 0
    else:
        noise = _noise(input, p, feature)
        if alpha:
            a = 1.0 / math.sqrt((_SELU_SATURATION**2 * p + 1) * (1 - p))
            shift = (noise - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
            out = input * (noise * a) + shift
        else:
            out = input * (noise / (1 - p))
    return input.copy_(out) if inplace else out


def _feature_dropout_nd(
    name: str, input: Tensor, p: float, training: bool, inplace: bool, spatial: int
) -> Tensor:
    require_tensor(name, input)
    _check_p(p)
    batched = input.ndim == spatial + 2
    x = input if batched else (input.unsqueeze_(0) if inplace else input.unsqueeze(0))
    out = _dropout_impl(x, p, training, inplace, feature=True, alpha=False)
    if batched:
        return out
    return out.squeeze_(0) if inplace else out.squeeze(0)


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability `p`, scaling the rest."""
    require_tensor("dropout1d", input)
    if input.ndim not in (2, 3):
        _check_p(p)
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs)."
        )
    return _feature_dropout_nd("dropout1d", input, p, training, inplace, 1)


def _deprecated_rank(name: str, ndim: int, spatial: int) -> None:
    if ndim not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"{name}: Received a {ndim}-D input to {name}, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            f"and silence this warning, please use dropout instead. Note that {name} "
            f"exists to provide channel-wise dropout on inputs with {spatial} spatial "
            "dimensions, a channel dimension, and an optional batch dimension "
            f"(i.e. {spatial + 1}D or {spatial + 2}D inputs).",
            stacklevel=3,
        )


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability `p`, scaling the rest.

    As in PyTorch, 3-D input is taken as (N, C, L) (with a warning), not as unbatched.
    """
    require_tensor("dropout2d", input)
    _check_p(p)
    _deprecated_rank("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability `p`."""
    require_tensor("dropout3d", input)
    _check_p(p)
    _deprecated_rank("dropout3d", input.ndim, 3)
    return _feature_dropout_nd("dropout3d", input, p, training, inplace, 3)


def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements go to its
    saturation value, then all are scaled and shifted."""
    require_tensor("alpha_dropout", input)
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """`alpha_dropout` of whole channels."""
    require_tensor("feature_alpha_dropout", input)
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)
