"""`torch.<name>` forms of nn.functional's functions, with ATen's signatures.

PyTorch exports many of nn.functional's kernels at the top level with the ATen schema's argument
order and defaults: `torch.batch_norm(input, weight, bias, running_mean, running_var, training,
momentum, eps, cudnn_enabled)`, losses with an integer `reduction` (0 none, 1 mean, 2 sum),
`torch.embedding(weight, indices, ...)`, pools that return only their values. The schemas'
`reduction=Mean` default reaches Python as 0: called without one, these losses do not reduce.
Each function here adapts those arguments and calls the one implementation nn.functional uses.
"""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor
from . import conv, distance, losses, margin_losses, normalization, pooling
from .activations import celu as _celu
from .activations import prelu as _prelu
from .activations import selu as _selu
from .channel_rearrange import channel_shuffle, pixel_shuffle, pixel_unshuffle, rms_norm
from .embedding import embedding as _embedding

_REDUCTIONS = ("none", "mean", "sum")


def reduction_name(reduction: Any) -> str:
    """ATen's integer reduction (0 none, 1 mean, 2 sum) as nn.functional's string."""
    if isinstance(reduction, str) and reduction in _REDUCTIONS:
        return reduction
    if isinstance(reduction, int) and not isinstance(reduction, bool) and 0 <= reduction <= 2:
        return _REDUCTIONS[reduction]
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _stride(stride: Any) -> Any:
    """ATen's empty stride (`[]`, the default) means the kernel size, as None does in F."""
    return None if stride is None or (isinstance(stride, list | tuple) and not stride) else stride


# ------------------------------------------------------------------ convolution and pooling
conv1d, conv2d, conv3d = conv.conv1d, conv.conv2d, conv.conv3d
conv_transpose1d, conv_transpose2d = conv.conv_transpose1d, conv.conv_transpose2d


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """3-D transposed convolution of (N, C, D, H, W) with (C, O / groups, KD, KH, KW)."""
    return conv._transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        3,
        "conv_transpose3d",
    )


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over sliding windows of (N, C, L)."""
    return pooling.avg_pool1d(
        input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad
    )


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over `output_size` adaptive windows of the last dim of (N, C, L)."""
    return pooling.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """Max over `output_size` adaptive windows of (N, C, L), and where each max was."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"adaptive_max_pool1d(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"adaptive_max_pool1d() argument 'input' (position 1) must be 2D or 3D, but got "
            f"{input.ndim}D"
        )
    size = output_size[0] if isinstance(output_size, list | tuple) else output_size
    values, indices = pooling.adaptive_max_pool2d(input.unsqueeze(-2), (1, size), True)
    return values.squeeze(-2), indices.squeeze(-2)


def _max_pool(
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    indices: bool,
    dims: int,
    op: str,
) -> Any:
    return pooling._max_pool(
        input, kernel_size, _stride(stride), padding, dilation, ceil_mode, indices, dims, op
    )


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Max over sliding windows of (N, C, L)."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, False, 1, "max_pool1d"
    )


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    """Max over sliding windows of (N, C, L), and where each max was."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, True, 1, "max_pool1d_with_indices"
    )


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Max over sliding windows of (N, C, H, W)."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, False, 2, "max_pool2d"
    )


def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, False, 3, "max_pool3d"
    )


# ------------------------------------------------------------------ normalization
def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Batch normalization, in ATen's argument order (`cudnn_enabled` changes nothing here)."""
    return normalization.batch_norm(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Instance normalization, in ATen's argument order."""
    return normalization.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    """Layer normalization over the trailing `normalized_shape`."""
    return normalization.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    """Group normalization of (N, C, *) in `num_groups` groups of channels."""
    return normalization.group_norm(input, num_groups, weight, bias, eps)


# ------------------------------------------------------------------ activations
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return _celu(input, alpha)


def selu(input: Tensor) -> Tensor:
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), PyTorch's constants."""
    return _selu(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), `weight` per channel (dim 1) or one for all."""
    return _prelu(input, weight)


# ------------------------------------------------------------------ lookup and distance
def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of `weight` at `indices`; the row `padding_idx` (when >= 0) gets no gradient."""
    padding = padding_idx if padding_idx is not None and padding_idx >= 0 else None
    return _embedding(indices, weight, padding, None, 2.0, scale_grad_by_freq, sparse)


cosine_similarity = distance.cosine_similarity
pairwise_distance = distance.pairwise_distance


# ------------------------------------------------------------------ losses
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 0,
) -> Tensor:
    """Binary cross entropy of sigmoid(input) against `target`, computed stably."""
    return losses.binary_cross_entropy_with_logits(
        input, target, weight, reduction=reduction_name(reduction), pos_weight=pos_weight
    )


def kl_div(
    input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False
) -> Tensor:
    """Kullback-Leibler divergence of `target` from log-probabilities `input`."""
    return losses.kl_div(input, target, reduction=reduction_name(reduction), log_target=log_target)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """max(0, -target * (input1 - input2) + margin)."""
    return losses.margin_ranking_loss(
        input1, input2, target, margin, reduction=reduction_name(reduction)
    )


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """1 - cos for target 1, max(0, cos - margin) for target -1."""
    return losses.cosine_embedding_loss(
        input1, input2, target, margin, reduction=reduction_name(reduction)
    )


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0
) -> Tensor:
    """x for target 1, max(0, margin - x) for target -1."""
    return margin_losses.hinge_embedding_loss(
        input, target, margin, reduction=reduction_name(reduction)
    )


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    """Negative log likelihood of `target` under Poisson(input)."""
    return margin_losses.poisson_nll_loss(
        input, target, log_input, full, eps=eps, reduction=reduction_name(reduction)
    )


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 0,
) -> Tensor:
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0)."""
    return margin_losses.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=reduction_name(reduction)
    )


FUNCTIONS: dict[str, Any] = {
    "conv1d": conv1d,
    "conv2d": conv2d,
    "conv3d": conv3d,
    "conv_transpose1d": conv_transpose1d,
    "conv_transpose2d": conv_transpose2d,
    "conv_transpose3d": conv_transpose3d,
    "avg_pool1d": avg_pool1d,
    "adaptive_avg_pool1d": adaptive_avg_pool1d,
    "adaptive_max_pool1d": adaptive_max_pool1d,
    "max_pool1d": max_pool1d,
    "max_pool1d_with_indices": max_pool1d_with_indices,
    "max_pool2d": max_pool2d,
    "max_pool3d": max_pool3d,
    "batch_norm": batch_norm,
    "instance_norm": instance_norm,
    "layer_norm": layer_norm,
    "group_norm": group_norm,
    "rms_norm": rms_norm,
    "celu": celu,
    "selu": selu,
    "pixel_shuffle": pixel_shuffle,
    "pixel_unshuffle": pixel_unshuffle,
    "channel_shuffle": channel_shuffle,
    "embedding": embedding,
    "cosine_similarity": cosine_similarity,
    "pairwise_distance": pairwise_distance,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "kl_div": kl_div,
    "margin_ranking_loss": margin_ranking_loss,
    "cosine_embedding_loss": cosine_embedding_loss,
    "hinge_embedding_loss": hinge_embedding_loss,
    "poisson_nll_loss": poisson_nll_loss,
    "triplet_margin_loss": triplet_margin_loss,
}
# prelu is also a Tensor method in PyTorch; the rest are functions only.
METHODS: dict[str, Any] = {"prelu": prelu}
FUNCTIONS["prelu"] = prelu
NOT_METHODS = tuple(name for name in FUNCTIONS if name not in METHODS)
