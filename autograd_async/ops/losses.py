"""Losses: nll_loss and binary_cross_entropy as nodes; cross entropy with class weights, label
smoothing or probability targets, bce with logits, l1, smooth l1, huber, kl_div, margin ranking
and cosine embedding composed of recorded ops, as PyTorch defines them.

`nn.functional` exposes these with PyTorch's signatures (including the legacy `size_average` and
`reduce`); the plain class-index cross entropy keeps its fused node in `nn_ops`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..batching import batchable
from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from .activations import logsigmoid
from .dual import as_array, data_of, log, mul_const, quiet, unsqueeze, where, xp_of
from .nn_ops import log_softmax
from .pointwise import xlogy

REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """The reduction string, from PyTorch's deprecated size_average/reduce when either is given."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction='"
        f"{_legacy(size_average, reduce)}' instead.",
        UserWarning,
        stacklevel=3,
    )
    return _legacy(size_average, reduce)


def _legacy(size_average: Any, reduce: Any) -> str:
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def check_reduction(reduction: str, allowed: tuple[str, ...] = REDUCTIONS) -> None:
    """PyTorch's error for an unknown reduction."""
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def reduce_loss(losses: Tensor, reduction: str) -> Tensor:
    """Elementwise losses reduced as `reduction` says."""
    if reduction == "none":
        return losses
    return losses.mean() if reduction == "mean" else losses.sum()


def _tensor_args(name: str, **values: Any) -> None:
    for arg, v in values.items():
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(v).__name__}")


def _same_device(name: str, input: Tensor, *others: Any) -> None:
    for other in others:
        if isinstance(other, Tensor) and other.device is not input.device:
            raise RuntimeError(
                f"{name}: expected all tensors to be on the same device, but found at least two "
                f"devices, {input.device} and {other.device}"
            )


def _same_size(name: str, input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({_size(target)}) must be the same as input size ({_size(input)})"
            if name == "binary_cross_entropy_with_logits"
            else f"Using a target size ({_size(target)}) that is different to the input size "
            f"({_size(input)}) is deprecated. Please ensure they have the same size."
        )


def _size(t: Tensor) -> str:
    return f"torch.Size({list(t.shape)})"


# ---------------------------------------------------------------- nll loss
class NllLossBackward0(Op):
    """-weight[t] * input[t] per sample along the class dim (1, or 0 for a single sample)."""

    __slots__ = ("_coef", "_axis", "_reduction", "_index", "_shape")
    saved_slots = ("_coef", "_index")
    op_name = "nll_loss"

    def forward(self, x: Any, target: Any, weight: Any, ignore_index: int, reduction: str) -> Any:
        xp = xp_of(x)
        axis = 1 if x.ndim > 1 else 0
        keep = target != ignore_index
        safe = xp.where(keep, target, 0)
        index = xp.expand_dims(safe, axis)
        picked = xp.squeeze(xp.take_along_axis(x, index, axis=axis), axis)
        w = keep.astype(x.dtype) if weight is None else weight[safe] * keep
        losses = -picked * w
        if reduction == "mean":
            total = w.sum()
            with quiet():  # everything ignored: 0 / 0, nan as in PyTorch
                coef = w / total
                out = losses.sum() / total
        else:
            coef = w
            out = losses if reduction == "none" else losses.sum()
        self._coef, self._axis, self._reduction = coef, axis, reduction
        self._index, self._shape = index, x.shape
        return as_array(xp.asarray(out, dtype=x.dtype))

    def backward(self, g: Any, *_: Any) -> tuple:
        self.check_released()
        axis = self._axis
        xp = xp_of(self._coef)
        classes = self._shape[axis]
        positions = xp.arange(classes).reshape((-1,) + (1,) * (len(self._shape) - axis - 1))
        scatter = (positions == self._index) * xp.expand_dims(-self._coef, axis)
        if self._reduction == "none":
            g = unsqueeze(g, axis)
        return mul_const(g, scatter.astype(g.dtype, copy=False)), None


@batchable
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of class indices under log-probabilities `input`, with class
    weights and ignored targets; input (C), (N, C) or (N, C, d1, ...)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _tensor_args("nll_loss", input=input, target=target)
    classes = _check_class_targets("nll_loss", input, target)
    w = _class_weight(weight, classes, input)
    if input.ndim == 1:
        target = target.reshape(())
    _check_target_values(target._data, classes, ignore_index)
    return NllLossBackward0.apply(
        input, target, weight=w, ignore_index=ignore_index, reduction=reduction
    )


def _check_class_targets(name: str, input: Tensor, target: Tensor) -> int:
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if target.dtype.kind not in "iu" or (target.dtype.kind == "u" and target.dtype.itemsize > 1):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {torch_type_name(target.dtype)}"
        )
    if input.ndim == 1:
        if target.ndim > 1 or (target.ndim == 1 and target.shape[0] != 1):
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        return input.shape[0]
    if target.ndim == 0 or input.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 0})."
        )
    expected = input.shape[:1] + input.shape[2:]
    if target.shape != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")
    return input.shape[1]


def _class_weight(weight: Any, classes: int, input: Tensor) -> Any:
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"weight must be a Tensor or None, not {type(weight).__name__}")
    if weight.ndim != 1 or weight.shape[0] != classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes but "
            f"got weight tensor of shape: {list(weight.shape)}"
        )
    if weight.device is not input.device:
        raise RuntimeError(
            f"nll_loss: expected all tensors to be on the same device, but found at least two "
            f"devices, {input.device} and {weight.device}"
        )
    return weight._data.astype(input.dtype, copy=False)


def target_summary(data: Any, ignore_index: int) -> tuple[int, int, int]:
    """The smallest and largest class index that is not `ignore_index`, and how many are not.

    Read from the device in one transfer: the one host synchronisation a class-index loss makes
    per step (PyTorch checks bounds in its kernel instead, asynchronously). On the host the usual
    case, no target equal to `ignore_index`, takes two plain reductions.
    """
    xp = xp_of(data)
    if not data.size:
        return 0, -1, 0
    if xp is np:
        low, high = int(data.min()), int(data.max())
        if not low <= ignore_index <= high:
            return low, high, data.size
    keep = data != ignore_index
    limits = np.iinfo(data.dtype)
    summary = xp.stack(
        (
            xp.where(keep, data, limits.max).min().astype(np.int64),
            xp.where(keep, data, limits.min).max().astype(np.int64),
            keep.sum().astype(np.int64),
        )
    )
    low, high, kept = (int(v) for v in summary.tolist())  # the host synchronisation
    return low, high, kept


def check_target_bounds(data: Any, classes: int, ignore_index: int) -> int:
    """Raise PyTorch's IndexError for a class index outside [0, classes) that is not ignored;
    returns how many targets are not ignored (one host synchronisation, see target_summary)."""
    low, high, kept = target_summary(data, ignore_index)
    if kept and (low < 0 or high >= classes):
        raise IndexError(f"Target {high if high >= classes else low} is out of bounds.")
    return kept


def _check_target_values(data: Any, classes: int, ignore_index: int) -> None:
    check_target_bounds(data, classes, ignore_index)


# ------------------------------------------------------------ cross entropy
@batchable
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy beyond the fused class-index case: class weights, label smoothing and
    probability targets, composed of log_softmax and nll_loss as PyTorch defines it."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    _tensor_args("cross_entropy", input=input, target=target)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    axis = 1 if input.ndim > 1 else 0
    classes = input.shape[axis]
    if target.shape == input.shape and target.dtype.kind in "iu":
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, got "
            f"{torch_type_name(target.dtype)}"
        )
    logp = log_softmax(input, axis)
    if target.dtype.kind == "f" and target.shape == input.shape:
        return _probability_targets(logp, target, weight, axis, reduction, label_smoothing)
    loss = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if not label_smoothing:
        return loss
    w = _class_weight(weight, classes, input)
    scaled = logp if w is None else mul_const(logp, _along(w, axis, input.ndim))
    keep = (target._data != ignore_index).astype(input.dtype)
    smooth = mul_const(-scaled.sum(axis), keep)
    if reduction == "mean":
        if w is None:
            denominator = keep.sum()
        else:
            safe = xp_of(target._data).where(keep > 0, target._data, 0)
            denominator = (w[safe] * keep).sum()
        with quiet():
            smooth = smooth.sum() / float(denominator)
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _along(w: Any, axis: int, ndim: int) -> Any:
    """Class weights shaped to broadcast along the class axis."""
    return w.reshape((-1,) + (1,) * (ndim - axis - 1))


def _probability_targets(
    logp: Tensor, target: Tensor, weight: Any, axis: int, reduction: str, label_smoothing: float
) -> Tensor:
    classes = logp.shape[axis]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = logp * target
    if weight is not None:
        w = _class_weight(weight, classes, logp)
        terms = mul_const(terms, _along(w, axis, logp.ndim))
    if reduction == "none":
        return -terms.sum(axis)
    if reduction == "sum":
        return -terms.sum()
    count = logp.numel() // classes if classes else 0
    return -terms.sum() / count if count else -terms.sum() * math.nan


# ---------------------------------------------------------- binary losses
class BinaryCrossEntropyBackward0(Op):
    """-w (t log x + (1 - t) log(1 - x)), each log clamped at -100 as in PyTorch."""

    __slots__ = ("_weight", "_reduction")
    saved_inputs = (0, 1)
    saved_slots = ("_weight",)

    def forward(self, x: Any, t: Any, weight: Any, reduction: str) -> Any:
        xp = xp_of(x)
        self._weight, self._reduction = weight, reduction
        with quiet():
            log_x = xp.maximum(xp.log(x), -100)
            log_1mx = xp.maximum(xp.log1p(-x), -100)
        losses = -(t * log_x + (1 - t) * log_1mx)
        if weight is not None:
            losses = losses * weight
        if reduction == "none":
            return as_array(losses.astype(x.dtype, copy=False))
        out = losses.mean() if reduction == "mean" else losses.sum()
        return as_array(xp.asarray(out, dtype=x.dtype))

    def backward(self, g: Any) -> tuple:
        self.check_released()
        x, t = self.saved(g)
        need = self.needs_input_grad
        scale = g / max(math.prod(x.shape), 1) if self._reduction == "mean" else g
        if self._weight is not None:
            scale = mul_const(scale, self._weight)
        gx = gt = None
        with quiet():
            if need[0]:
                # PyTorch's rule: (x - t) / max(x (1 - x), 1e-12)
                denominator = (1 - x) * x
                if isinstance(denominator, Tensor):
                    denominator = denominator.clamp(min=1e-12)
                else:
                    denominator = xp_of(denominator).maximum(denominator, 1e-12)
                gx = scale * (x - t) / denominator
            if need[1]:
                gt = scale * (log(1 - x) - log(x))
        return gx, gt


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy between probabilities `input` and `target` (same shape)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _tensor_args("binary_cross_entropy", input=input, target=target)
    _same_size("binary_cross_entropy", input, target)
    if target.dtype != input.dtype:  # PyTorch's kernel takes one dtype for both
        raise RuntimeError(
            f"Found dtype {torch_type_name(target.dtype)} but expected "
            f"{torch_type_name(input.dtype)}"
        )
    data = input._data
    if data.size and not bool(((data >= 0) & (data <= 1)).all()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    w = None
    if weight is not None:
        _tensor_args("binary_cross_entropy", weight=weight)
        _same_device("binary_cross_entropy", input, weight)
        w = xp_of(data).broadcast_to(weight._data, data.shape).astype(data.dtype, copy=False)
    return BinaryCrossEntropyBackward0.apply(input, target, weight=w, reduction=reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy on logits: (1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _tensor_args("binary_cross_entropy_with_logits", input=input, target=target)
    _same_size("binary_cross_entropy_with_logits", input, target)
    if pos_weight is None:
        losses = (1 - target) * input - logsigmoid(input)
    else:
        log_weight = (pos_weight - 1) * target + 1
        losses = (1 - target) * input - log_weight * logsigmoid(input)
    if weight is not None:
        losses = losses * weight
    return reduce_loss(losses, reduction)


# ------------------------------------------------------ regression losses
def _difference(name: str, input: Tensor, target: Tensor) -> Tensor:
    _tensor_args(name, input=input, target=target)
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({_size(target)}) that is different to the input size "
            f"({_size(input)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )
    return input - target


def _check_weight(input: Tensor, weight: Any) -> None:
    if weight is not None and (not isinstance(weight, Tensor) or weight.shape != input.shape):
        raise ValueError("Weights and input must have the same size.")


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean (or sum, or elementwise) absolute error; with `weight`, the weighted mean."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    losses = _difference("l1_loss", input, target).abs()
    if weight is None:
        return reduce_loss(losses, reduction)
    _check_weight(input, weight)
    losses = losses * weight
    # PyTorch divides a weighted l1 by the weights' sum (huber_loss takes a plain mean)
    return losses.sum() / weight.sum() if reduction == "mean" else reduce_loss(losses, reduction)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (l1 when beta is 0)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = _difference("smooth_l1_loss", input, target)
    magnitude = d.abs()
    if beta == 0:
        return reduce_loss(magnitude, reduction)
    losses = where(magnitude < beta, d * d * (0.5 / beta), magnitude - 0.5 * beta)
    return reduce_loss(losses, reduction)


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), times `weight` when given."""
    check_reduction(reduction)
    _check_weight(input, weight)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = _difference("huber_loss", input, target)
    magnitude = d.abs()
    losses = where(magnitude < delta, d * d * 0.5, (magnitude - 0.5 * delta) * delta)
    if weight is not None:
        losses = losses * weight
    return reduce_loss(losses, reduction)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """KL(target || exp(input)) per element: target (log target - input), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, REDUCTIONS + ("batchmean",))
    _tensor_args("kl_div", input=input, target=target)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=2,
        )
    if log_target:
        losses = (target - input) * target.exp()
    else:
        losses = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.shape[0] if input.ndim else total
    return reduce_loss(losses, reduction)


# --------------------------------------------------------- ranking losses
def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -target (input1 - input2) + margin), reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _tensor_args("margin_ranking_loss", input1=input1, input2=input2, target=target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size(input1)}, input2: {_size(input2)}, target: {_size(target)} "
        )
    losses = (-target * (input1 - input2) + margin).clamp_min(0)
    return reduce_loss(losses, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _tensor_args("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    _same_device("cosine_embedding_loss", input1, input2, target)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != target.ndim + 1 or input2.ndim != input1.ndim:
        raise RuntimeError(
            f"{target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found "
            f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}."
        )
    dim = target.ndim
    eps = 1e-12
    products = (input1 * input2).sum(dim)
    squares1 = (input1 * input1).sum(dim) + eps
    squares2 = (input2 * input2).sum(dim) + eps
    cos = products / (squares1 * squares2).sqrt()
    labels = data_of(target)
    positive = where(labels == 1, 1 - cos, 0.0)
    negative = where(labels == -1, (cos - margin).clamp_min(0), 0.0)
    return reduce_loss(positive + negative, reduction)


FUNCTIONS: dict[str, Any] = {}
