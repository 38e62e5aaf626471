"""Margin, hinge and likelihood losses composed of recorded ops, as PyTorch defines them:
triplet margin (with a distance function), multi-class and multi-label margin, multi-label soft
margin, hinge embedding, soft margin, Poisson and Gaussian negative log likelihood.

Masks built from integer targets are constants (no gradient), as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from ..grad_mode import no_grad
from .activations import logsigmoid
from .distance import pairwise_distance
from .dual import data_of, where, xp_of
from .losses import _tensor_args, check_reduction, legacy_reduction, reduce_loss


def _reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    return reduction


def _constant(values: Any, like: Tensor) -> Tensor:
    return Tensor._wrap(values, like.device)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs"
        )


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) for a distance d (pairwise_distance by default)."""
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(
            f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
            f"got {margin} instead"
        )
    _tensor_args(
        "triplet_margin_with_distance_loss", anchor=anchor, positive=positive, negative=negative
    )
    _check_triplet_dims(anchor, positive, negative)
    distance = distance_function if distance_function is not None else pairwise_distance
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        between = distance(positive, negative)
        to_negative = where(data_of(between) < data_of(to_negative), between, to_negative)
    losses = (margin + to_positive - to_negative).clamp_min(0)
    return reduce_loss(losses, reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """max(||a - p + eps||_p - ||a - n + eps||_p + margin, 0), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_args("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    _check_triplet_dims(anchor, positive, negative)

    def distance(x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, p, eps)

    to_positive, to_negative = distance(anchor, positive), distance(anchor, negative)
    if swap:
        between = distance(positive, negative)
        to_negative = where(data_of(between) < data_of(to_negative), between, to_negative)
    return reduce_loss((margin + to_positive - to_negative).clamp_min(0), reduction)


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C per sample (times weight[y])."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _tensor_args("multi_margin_loss", input=input, target=target)
    x = input if input.ndim > 1 else input.reshape(1, -1)
    samples, classes = x.shape[0], x.shape[-1]
    labels = data_of(target).reshape(-1)
    if target.ndim > 1 or labels.shape[0] != samples:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{samples}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != classes):
        raise RuntimeError(
            f"inconsistent weight size, expected {classes} but got {list(weight.shape)}"
        )
    if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= classes):
        raise RuntimeError("target out of range")
    xp = xp_of(labels)
    chosen = xp.arange(classes)[None, :] == labels[:, None]  # (N, C), a constant
    picked = (x * _constant(chosen.astype(x.dtype), x)).sum(1, keepdim=True)
    gaps = (margin - picked + x).clamp_min(0)
    if p == 2:
        gaps = gaps * gaps
    if weight is not None:
        gaps = gaps * weight[_constant(labels, x)].reshape(-1, 1)
    losses = where(chosen, 0.0, gaps).sum(1) / classes
    if input.ndim <= 1:
        losses = losses.reshape(())
    return reduce_loss(losses, reduction)


def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """sum over target classes j and other classes i of max(0, 1 - (x[j] - x[i])) / C.

    Each row of `target` lists class indices up to its first -1.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_args("multilabel_margin_loss", input=input, target=target)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    x = input if input.ndim > 1 else input.reshape(1, -1)
    classes = x.shape[-1]
    labels = np.asarray(target.reshape(x.shape).tolist(), dtype=np.int64)
    is_target = np.zeros(labels.shape, dtype=bool)
    for row, values in enumerate(labels):
        for value in values:
            if value < 0:
                break
            if value >= classes:
                raise RuntimeError("target out of range")
            is_target[row, value] = True
    pairs = is_target[:, :, None] & ~is_target[:, None, :]  # (N, j, i): j a target, i not
    gaps = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    xp = xp_of(x._data)
    losses = (gaps * _constant(xp.asarray(pairs.astype(x.dtype)), x)).sum((1, 2)) / classes
    if input.ndim <= 1:
        losses = losses.reshape(())
    return reduce_loss(losses, reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted, averaged over classes."""
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_args("multilabel_soft_margin_loss", input=input, target=target)
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    losses = losses.sum(dim=input.ndim - 1) / input.shape[-1]
    return reduce_loss(losses, reduction)


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """x where the target is 1, max(0, margin - x) where it is -1 (both where it is neither)."""
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_args("hinge_embedding_loss", input=input, target=target)
    labels = data_of(target)
    margin_part = where(labels != 1, (margin - input).clamp_min(0), 0.0)
    self_part = where(labels != -1, input, 0.0)
    return reduce_loss(margin_part + self_part, reduction)


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """log(1 + exp(-y x)), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_args("soft_margin_loss", input=input, target=target)
    return reduce_loss((1 + (-target * input).exp()).log(), reduction)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: Any = None,
    eps: float = 1e-8,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """exp(x) - y x (log_input), or x - y log(x + eps); `full` adds Stirling's term."""
    reduction = _reduction(size_average, reduce, reduction)
    _tensor_args("poisson_nll_loss", input=input, target=target)
    if log_input:
        losses = input.exp() - target * input
    else:
        losses = input - target * (input + eps).log()
    if full:  # Stirling's term, recorded on the target as PyTorch's (its gradient too)
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        losses = losses + where(data_of(target) <= 1, 0.0, stirling)
    return reduce_loss(losses, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """0.5 (log(max(var, eps)) + (x - y)^2 / max(var, eps)) (+ 0.5 log(2 pi) when `full`)."""
    check_reduction(reduction)
    if not isinstance(var, Tensor):
        var = Tensor._wrap(
            xp_of(input._data).full(input.shape, float(var), input.dtype), input.device
        )
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if bool((data_of(var) < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():  # the clamp passes the gradient through unchanged, as PyTorch's
        var.clamp_(min=eps)
    losses = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        losses = losses + 0.5 * math.log(2 * math.pi)
    return reduce_loss(losses, reduction)


__all__ = [
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
