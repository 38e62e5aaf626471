"""`nn.functional`: relu, gelu, softmax, log_softmax, cross_entropy, mse_loss, dropout, linear;
the other activations and losses come from `ops.activations` and `ops.losses`."""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any

from ..core.op import torch_type_name
from ..core.tensor import Tensor
from ..creation import default_generator
from ..ops import autocast_policy
from ..ops.attention import scaled_dot_product_attention
from ..ops.conv import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from ..ops.distance import cosine_similarity, normalize, pairwise_distance
from ..ops.elementwise import ReluBackward0, SigmoidBackward0, TanhBackward0
from ..ops.embedding import embedding, one_hot
from ..ops.nn_ops import (
    CrossEntropyLossBackward0,
    GeluBackward0,
    LinearBackward0,
    MseLossBackward0,
    NativeDropoutBackward0,
)
from ..ops.nn_ops import log_softmax as _log_softmax
from ..ops.nn_ops import softmax as _softmax
from ..ops.normalization import batch_norm, group_norm, instance_norm, layer_norm
from ..ops.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from ..ops.promotion import result_type
from ..ops.sampling import interpolate, pad
from ..type_names import type_name

# isort: split
from ..ops import losses as _losses
from ..ops.activations import (
    celu,
    elu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    leaky_relu_,
    logsigmoid,
    mish,
    prelu,
    relu6,
    selu,
    silu,
    softplus,
    softsign,
    tanhshrink,
)
from ..ops.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    nll_loss,
    smooth_l1_loss,
)

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _require_tensor(value: Any, function: str, argument: str, position: int) -> None:
    # PyTorch's wording; without the check a list fails later on a missing `.ndim` or `.dtype`.
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{function}(): argument '{argument}' (position {position}) must be Tensor, not "
            f"{type_name(value)}"
        )


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0) elementwise."""
    if inplace:
        return input.relu_()
    return ReluBackward0.apply(input)


def relu_over_temporary(input: Tensor) -> Tensor:
    """relu(input) written over input's array, which saves a pass over fresh memory.

    Only for a caller that holds the sole reference to `input`, a result no one else has seen
    (nn.Sequential after a Linear), and drops it: the graph is relu's as usual, and only that
    unreachable tensor sees its values change.
    """
    return ReluBackward0.apply(input, into_input=True)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-input)) elementwise."""
    return SigmoidBackward0.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent elementwise."""
    return TanhBackward0.apply(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly (`approximate='none'`) or with the tanh approximation."""
    _require_tensor(input, "gelu", "input", 1)
    if input.dtype.kind != "f":  # PyTorch's kernel has no integer form (silu's does not either)
        got = torch_type_name(input.dtype)
        raise NotImplementedError(f"\"GeluKernelImpl\" not implemented for '{got}'")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return GeluBackward0.apply(input, approximate=approximate)


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """exp(input) / sum(exp(input)) along `dim`."""
    _require_tensor(input, "softmax", "input", 1)
    return _softmax(input, _implicit_dim(input, dim, "softmax"), dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """input - logsumexp(input) along `dim`."""
    _require_tensor(input, "log_softmax", "input", 1)
    return _log_softmax(input, _implicit_dim(input, dim, "log_softmax"), dtype)


def _implicit_dim(input: Tensor, dim: int | None, function: str) -> int:
    # PyTorch's legacy choice when no dim is given: 0 for 0-, 1- and 3-D inputs, else 1. It is
    # rarely what a batch of 3-D inputs wants, hence PyTorch's warning, given here too.
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {function} has been deprecated. Change the call to "
        "include dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if input.ndim in (0, 1, 3) else 1


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, as one node."""
    _require_tensor(input, "linear", "input", 1)
    _require_tensor(weight, "linear", "weight", 2)
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        cols = input.shape[-1] if input.ndim else 1
        wshape = "x".join(str(n) for n in weight.shape[::-1])
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and {wshape})"
        )
    # NumPy would promote a float64 or int64 input against a float32 weight and return float64;
    # PyTorch refuses, naming the operands as its addmm does (self is the bias).
    if input.dtype != weight.dtype:
        raise RuntimeError(
            "mat1 and mat2 must have the same dtype, but got "
            f"{torch_type_name(input.dtype)} and {torch_type_name(weight.dtype)}"
        )
    if bias is not None and bias.dtype != weight.dtype:
        raise RuntimeError(
            "self and mat2 must have the same dtype, but got "
            f"{torch_type_name(bias.dtype)} and {torch_type_name(weight.dtype)}"
        )
    if bias is None:
        return LinearBackward0.apply(input, weight)
    return LinearBackward0.apply(input, weight, bias)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Softmax cross entropy against class indices (one fused node: backward softmax - onehot),
    or with class weights, label smoothing or class-probability targets."""
    if size_average is not None or reduce is not None:
        reduction = _losses.legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _require_tensor(input, "cross_entropy", "input", 1)
    _require_tensor(target, "cross_entropy", "target", 2)
    # Class indices have one dim fewer than the input; anything else takes the general path.
    if (
        weight is not None
        or label_smoothing
        or target.dtype.kind not in "iu"
        or target.ndim == input.ndim
    ):
        return _losses.cross_entropy(
            input, target, weight, ignore_index, reduction, label_smoothing
        )
    expected = input.shape[:1] + input.shape[2:] if input.ndim > 1 else ()
    if target.shape != expected:
        raise ValueError(f"Expected target size {tuple(expected)}, got {tuple(target.shape)}")
    # One host synchronisation: the targets' bounds and how many are not ignored, together.
    kept = _losses.check_target_bounds(
        target._data, input.shape[1] if input.ndim > 1 else input.shape[0], ignore_index
    )
    return CrossEntropyLossBackward0.apply(
        input,
        target,
        reduction=reduction,
        ignore_index=ignore_index if kept != target._data.size else None,
        kept=kept,
    )


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean (or sum, or elementwise) squared error; with `weight`, the weighted mean."""
    reduction = _losses.legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _require_tensor(input, "mse_loss", "input", 1)
    _require_tensor(target, "mse_loss", "target", 2)
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=2,
        )
    if input.dtype != target.dtype or input.dtype.kind not in "fc":
        # PyTorch's promotion (float32 with an int64 target stays float32; NumPy's would give
        # float64), and like PyTorch no integer loss.
        dtype = result_type(input._data, target._data)
        if dtype.kind not in "fc":
            raise NotImplementedError(
                f"\"mse_loss\" not implemented for '{torch_type_name(dtype)}'"
            )
        input, target = input.to(dtype=dtype), target.to(dtype=dtype)
    if weight is not None:  # PyTorch's weighted form: composed, divided by the weights' sum
        if not isinstance(weight, Tensor) or weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        difference = input - target
        losses = difference * difference * weight
        if reduction == "mean":
            return losses.sum() / weight.sum()
        return losses.sum() if reduction == "sum" else losses
    return MseLossBackward0.apply(input, target, reduction=reduction)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p), when training."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0
    out = NativeDropoutBackward0.apply(input, p=p, generator=default_generator)
    return input.copy_(out) if inplace else out


__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "cosine_embedding_loss",
    "elu",
    "glu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "leaky_relu",
    "leaky_relu_",
    "logsigmoid",
    "margin_ranking_loss",
    "mish",
    "nll_loss",
    "prelu",
    "relu6",
    "selu",
    "silu",
    "smooth_l1_loss",
    "softplus",
    "softsign",
    "tanhshrink",
    "cross_entropy",
    "dropout",
    "gelu",
    "linear",
    "log_softmax",
    "mse_loss",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]

# The layers' math: convolutions, pooling, resampling, normalisation, lookups, attention.
__all__ += [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cosine_similarity",
    "embedding",
    "fold",
    "group_norm",
    "instance_norm",
    "interpolate",
    "layer_norm",
    "max_pool1d",
    "max_pool2d",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "scaled_dot_product_attention",
    "unfold",
]

# isort: split
from ..ops.embedding_bag import embedding_bag  # noqa: E402

__all__ += ["embedding_bag"]
from ..ops.margin_losses import (  # noqa: E402
    gaussian_nll_loss,
    hinge_embedding_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)

__all__ += [
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]
from ..ops.channel_rearrange import (  # noqa: E402
    channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
    rms_norm,
    softmin,
)

__all__ += ["channel_shuffle", "pixel_shuffle", "pixel_unshuffle", "rms_norm", "softmin"]

# isort: split
from ..ops.composites import bilinear, pdist  # noqa: E402
from ..ops.ctc import ctc_loss  # noqa: E402
from ..ops.dropout_family import (  # noqa: E402
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ..ops.fractional_pooling import (  # noqa: E402
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from ..ops.grid_sampling import affine_grid, grid_sample  # noqa: E402
from ..ops.gumbel_softmax import gumbel_softmax  # noqa: E402
from ..ops.local_response import local_response_norm  # noqa: E402
from ..ops.pooling import (  # noqa: E402
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
)
from ..ops.power_pooling import lp_pool1d, lp_pool2d, lp_pool3d  # noqa: E402
from ..ops.thresholds import hardshrink, rrelu, softshrink, threshold  # noqa: E402
from ..ops.time_batch_forms import conv_tbc, native_channel_shuffle  # noqa: E402
from ..ops.unpooling import max_unpool1d, max_unpool2d, max_unpool3d  # noqa: E402
from .functional_aliases import *  # noqa: E402, F403 - the deprecated and in-place names
from .functional_aliases import __all__ as _aliases  # noqa: E402
from .functional_attention import multi_head_attention_forward  # noqa: E402

__all__ += [
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "affine_grid",
    "alpha_dropout",
    "avg_pool3d",
    "conv_transpose3d",
    "ctc_loss",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "grid_sample",
    "gumbel_softmax",
    "hardshrink",
    "local_response_norm",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "multi_head_attention_forward",
    "rrelu",
    "softshrink",
    "threshold",
    "bilinear",
    "pdist",
    "conv_tbc",
    "native_channel_shuffle",
    *_aliases,
]

# isort: split
autocast_policy.install(sys.modules[__name__])  # linear, cross_entropy, mse_loss: as a whole
