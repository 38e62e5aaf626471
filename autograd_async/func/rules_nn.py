"""Batching rules of products, convolutions, pooling, normalisation, losses and dropout."""

from __future__ import annotations

from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from ..creation import ones
from ..ops import (
    arithmetic,
    conv,
    linalg,
    losses,
    max_pool,
    nn_ops,
    random_draws,
    random_fills,
    sampling,
)
from ..ops.arithmetic import matmul
from ..ops.embedding import EmbeddingBackward0
from ..ops.layer_norm import NativeLayerNormBackward0
from ..ops.nn_ops import NativeDropoutBackward0
from ..ops.reduction import MeanBackward1, SumBackward1
from .batched import unwrap
from .dispatch import RANDOM_ERROR, current_randomness, op_rule, per_example, wrap_out
from .rules import aligned, padded
from .shared_weight import SharedWeightLinear, SharedWeightMatmul, is_shared


def _loop(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    return per_example(cls.op_name, lambda *xs: cls.apply(*xs, **kwargs), level, inputs)


@op_rule(
    arithmetic.MmBackward0,
    arithmetic.MvBackward0,
    arithmetic.DotBackward0,
    arithmetic.BmmBackward0,
)
def _matmul(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    a, b = inputs
    va, a_batched = unwrap(a, level)
    vb, b_batched = unwrap(b, level)
    if a_batched and b_batched and is_shared(vb) and b.ndim == 2 and a.ndim >= 1:
        return wrap_out(SharedWeightMatmul.apply(va, vb), level)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_batched and a_vec:
        va = va.unsqueeze(1)
    if b_batched and b_vec:
        vb = vb.unsqueeze(-1)
    if not a_batched and a_vec:
        va = va.unsqueeze(0)
    if not b_batched and b_vec:
        vb = vb.unsqueeze(-1)
    # Pad the example batch dims of the batched operands so that they broadcast per example.
    rank = max(a.ndim + a_vec, b.ndim + b_vec)
    if a_batched:
        va = padded_value(va, rank)
    if b_batched:
        vb = padded_value(vb, rank)
    out = matmul(va, vb)
    if b_vec:
        out = out.squeeze(-1)
    if a_vec:
        out = out.squeeze(-1 if b_vec else -2)
    return wrap_out(out, level)


def padded_value(v: Tensor, rank: int) -> Tensor:
    """A batched value (dim 0 the batch) with length-1 dims after the batch up to `rank`."""
    missing = rank - (v.ndim - 1)
    if missing <= 0:
        return v
    return v.reshape((v.shape[0],) + (1,) * missing + tuple(v.shape[1:]))


@op_rule(nn_ops.LinearBackward0)
def _linear(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x, w = inputs[:2]
    b = inputs[2] if len(inputs) > 2 else None
    vx, x_batched = unwrap(x, level)
    vw, w_batched = unwrap(w, level)
    vb, b_batched = unwrap(b, level) if b is not None else (None, False)
    if not w_batched and not b_batched:
        return wrap_out(cls.apply(vx, *inputs[1:]), level)
    if x_batched and w_batched and is_shared(vw) and (b is None or (b_batched and is_shared(vb))):
        return wrap_out(SharedWeightLinear.apply(vx, *((vw,) if b is None else (vw, vb))), level)
    out = matmul(x, w.transpose(0, 1))  # composed of batched ops: a weight per example
    return out if b is None else out + b


def _flattened(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    """An op on (N, C, *spatial) with only input 0 batched: the batch folds into N."""
    x = inputs[0]
    v = unwrap(x, level)[0]
    size = v.shape[0]
    folded = v.reshape((size * v.shape[1],) + tuple(v.shape[2:]))
    out = cls.apply(folded, *inputs[1:], **kwargs)

    def unfold(o: Any) -> Any:
        if not isinstance(o, Tensor):
            return o
        return o.reshape((size, o.shape[0] // size) + tuple(o.shape[1:]))

    out = tuple(unfold(o) for o in out) if isinstance(out, tuple) else unfold(out)
    return wrap_out(out, level)


@op_rule(
    max_pool.MaxPoolWithIndicesBackward0,
    conv.Im2ColBackward0,
    conv.Col2ImBackward0,
)
def _pooling(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    if any(unwrap(x, level)[1] for x in inputs[1:]):
        return _loop(cls, level, inputs, kwargs)
    return _flattened(cls, level, inputs, kwargs)


@op_rule(conv.ConvolutionBackward0)
def _convolution(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x, w = inputs[:2]
    b = inputs[2] if len(inputs) > 2 else None
    vw, w_batched = unwrap(w, level)
    vb, b_batched = unwrap(b, level) if b is not None else (None, False)
    if not w_batched and not b_batched:
        return _flattened(cls, level, inputs, kwargs)
    # A weight per example: the examples become groups of one convolution over (N, B*C, ...).
    groups = kwargs["groups"]
    vx, x_batched = unwrap(x, level)
    size = vw.shape[0]
    if not x_batched:
        vx = vx.unsqueeze(0).expand((size,) + tuple(vx.shape))
    n, c = vx.shape[1], vx.shape[2]
    spatial = tuple(vx.shape[3:])
    xs = vx.transpose(0, 1).reshape((n, size * c) + spatial)
    ws = vw.reshape((size * vw.shape[1],) + tuple(vw.shape[2:]))
    args = [xs, ws]
    if vb is not None:  # (there is a bias)
        if not b_batched:
            vb = vb.unsqueeze(0).expand((size,) + tuple(vb.shape))
        args.append(vb.reshape((-1,)))
    out = cls.apply(*args, win=kwargs["win"], groups=groups * size)
    out = out.reshape((n, size, out.shape[1] // size) + tuple(out.shape[2:])).transpose(0, 1)
    return wrap_out(out, level)


def _reduced(losses: Tensor, reduction: str) -> Tensor:
    """Per-example losses (dim 0 the batch) reduced over each example's elements."""
    if reduction == "none" or losses.ndim == 1:
        return losses
    dims = tuple(range(1, losses.ndim))
    op = MeanBackward1 if reduction == "mean" else SumBackward1
    return op.apply(losses, dims=dims, keepdim=False)


@op_rule(nn_ops.MseLossBackward0)
def _mse(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    a, b = inputs
    rank = max(a.ndim, b.ndim)
    va, vb = padded(a, level, rank), padded(b, level, rank)
    losses = cls.apply(va, vb, reduction="none")
    if not unwrap(a, level)[1] or not unwrap(b, level)[1]:
        batched_one = va if unwrap(a, level)[1] else vb
        losses = losses.expand(tuple(batched_one.shape[:1]) + tuple(losses.shape[1:]))
    return wrap_out(_reduced(losses, kwargs["reduction"]), level)


@op_rule(nn_ops.CrossEntropyLossBackward0)
def _cross_entropy(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x, target = inputs
    vx, x_batched = unwrap(x, level)
    vt, t_batched = unwrap(target, level)
    if x.ndim > 2 or kwargs.get("ignore_index") is not None or not (x_batched and t_batched):
        return _loop(cls, level, inputs, kwargs)
    classes = vx.shape[-1]
    losses = cls.apply(
        vx.reshape((-1, classes)), vt.reshape((-1,)), reduction="none", ignore_index=None
    )
    losses = losses.reshape(tuple(vt.shape))
    return wrap_out(_reduced(losses, kwargs["reduction"]), level)


@op_rule(NativeDropoutBackward0)
def _dropout(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    mode = current_randomness()
    if mode == "error":
        raise RuntimeError(RANDOM_ERROR)
    (x,) = inputs
    v = unwrap(x, level)[0]
    if mode == "different":
        return wrap_out(cls.apply(v, **kwargs), level)

    mask = cls.apply(ones(*x.shape, dtype=x.dtype, device=x.device), **kwargs)
    return x * mask


@op_rule(EmbeddingBackward0)
def _embedding(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    weight, indices = inputs[:2]
    if unwrap(weight, level)[1]:
        return _loop(cls, level, inputs, kwargs)
    return wrap_out(cls.apply(weight, unwrap(indices, level)[0], *inputs[2:], **kwargs), level)


@op_rule(NativeLayerNormBackward0)
def _layer_norm(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    if any(unwrap(x, level)[1] for x in inputs[1:] if isinstance(x, Tensor)):
        return _loop(cls, level, inputs, kwargs)
    return wrap_out(cls.apply(unwrap(inputs[0], level)[0], *inputs[1:], **kwargs), level)


@op_rule(linalg.EinsumBackward0)
def _einsum(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    used = set("".join(kwargs["terms"]) + kwargs["out"])
    letter = next(
        c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in used
    )
    values, terms = [], []
    for x, term in zip(inputs, kwargs["terms"]):
        v, is_batched = unwrap(x, level)
        values.append(v)
        terms.append(letter + term if is_batched else term)
    return wrap_out(cls.apply(*values, terms=tuple(terms), out=letter + kwargs["out"]), level)


@op_rule(sampling.ConstantPadNdBackward0)
def _constant_pad(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    # Padding names trailing dims only: the batch dim in front is left alone.
    return wrap_out(cls.apply(unwrap(inputs[0], level)[0], **kwargs), level)


@op_rule(losses.BinaryCrossEntropyBackward0)
def _binary_cross_entropy(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x, target = inputs[:2]
    if kwargs.get("weight") is not None:
        return _loop(cls, level, inputs, kwargs)
    rank = max(x.ndim, target.ndim)
    vx, vt = padded(x, level, rank), padded(target, level, rank)
    if not unwrap(x, level)[1]:
        vx = vx.expand(tuple(vt.shape))
    losses = cls.apply(vx, vt, weight=None, reduction="none")
    return wrap_out(_reduced(losses, kwargs["reduction"]), level)


@op_rule(
    random_draws.BernoulliBackward0,
    random_draws.BernoulliWithP,
    random_draws._Normal,
    random_draws.PoissonBackward0,
    random_fills.RandomFill,
)
def _random(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    """Draws shaped by batched inputs: one per element of the batch ("different")."""
    mode = current_randomness()
    if mode == "error":
        raise RuntimeError(RANDOM_ERROR)
    if mode == "same":
        raise RuntimeError(
            f"vmap: {cls.op_name} of a batched tensor with randomness='same' is not supported; "
            "use randomness='different' or draw outside vmap"
        )
    return wrap_out(cls.apply(*aligned(inputs, level), **kwargs), level)
