"""`nn.functional`: relu, gelu, softmax, log_softmax, cross_entropy, mse_loss, dropout, linear;
the other activations and losses come from `ops.activations` and `ops.losses`."""

from __future__ import annotations

import math
from typing import Any

from ..creation import default_generator
from ..ops.elementwise import ReluBackward0, SigmoidBackward0, TanhBackward0
from ..ops.nn_ops import (
    CrossEntropyLossBackward0,
    GeluBackward0,
    LinearBackward0,
    LogSoftmaxBackward0,
    MseLossBackward0,
    NativeDropoutBackward0,
)
from ..ops.nn_ops import (
    softmax as _softmax,
)
from ..ops.reduction import normalize_dim
from ..tensor import Tensor

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
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return GeluBackward0.apply(input, approximate=approximate)


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """exp(input) / sum(exp(input)) along `dim`."""
    if dtype is not None:
        input = input.to(dtype=dtype)
    return _softmax(input, _implicit_dim(input, dim))


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """input - logsumexp(input) along `dim`."""
    if dtype is not None:
        input = input.to(dtype=dtype)
    dim = normalize_dim(_implicit_dim(input, dim), input.ndim)
    return LogSoftmaxBackward0.apply(input, dim=dim)


def _implicit_dim(input: Tensor, dim: int | None) -> int:
    # PyTorch's legacy choice when no dim is given: 0 for 0-, 1- and 3-D inputs, else 1.
    if dim is not None:
        return dim
    return 0 if input.ndim in (0, 1, 3) else 1


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, as one node."""
    if weight.ndim != 2 or input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        cols = input.shape[-1] if input.ndim else 1
        wshape = "x".join(str(n) for n in weight.shape[::-1])
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and {wshape})"
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
    # Class indices have one dim fewer than the input; anything else takes the general path.
    if (weight is not None or label_smoothing or not isinstance(target, Tensor)
            or target.dtype.kind not in "iu" or target.ndim == input.ndim):
        return _losses.cross_entropy(input, target, weight, ignore_index, reduction,
                                     label_smoothing)
    expected = input.shape[:1] + input.shape[2:] if input.ndim > 1 else ()
    if target.shape != expected:
        raise ValueError(
            f"Expected target size {tuple(expected)}, got {tuple(target.shape)}"
        )
    may_ignore = _check_targets(
        target._data, input.shape[1] if input.ndim > 1 else input.shape[0], ignore_index
    )
    return CrossEntropyLossBackward0.apply(
        input, target, reduction=reduction, ignore_index=ignore_index if may_ignore else None
    )


def _check_targets(data: Any, classes: int, ignore_index: int) -> bool:
    """Raise PyTorch's IndexError for a class index out of [0, classes) that is not ignored.

    Returns whether any target may equal `ignore_index`: when the targets' range leaves it out
    (the default -100 against valid indices), the loss needs no mask.
    """
    if not data.size:
        return False
    low, high = int(data.min()), int(data.max())
    if 0 <= low and high < classes:  # the usual case, settled by two reductions
        return low <= ignore_index <= high
    valid = data[data != ignore_index]
    if valid.size and (int(valid.min()) < 0 or int(valid.max()) >= classes):
        bad = int(valid.max()) if int(valid.max()) >= classes else int(valid.min())
        raise IndexError(f"Target {bad} is out of bounds.")
    return True


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Mean (or sum, or elementwise) squared error."""
    _check_reduction(reduction)
    return MseLossBackward0.apply(input, target, reduction=reduction)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p), when training."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0
    out = NativeDropoutBackward0.apply(input, p=p, rng=default_generator.rng)
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
