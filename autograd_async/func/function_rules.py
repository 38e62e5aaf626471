"""Batching rules of public functions that read their inputs' arrays without an op:
comparisons and other results outside the graph, argmax, indexing by tensors, gather, and
the losses over class indices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.tensor import Tensor
from ..creation import arange, zeros
from ..ops.elementwise import where
from ..ops.reduction import normalize_dim
from .batched import top_level, unwrap
from .dispatch import (
    RANDOM_ERROR,
    current_randomness,
    function_rule,
    materialize,
    per_example,
    wrap_out,
)
from .rules import aligned, padded


@function_rule("_no_grad_op")
def _elementwise_outside_graph(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    name, ufunc, *inputs = args
    return wrap_out(fn(name, ufunc, *aligned(tuple(inputs), level)), level)


@function_rule("_arg")
def _arg(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    x, dim, keepdim, largest = args
    v = unwrap(x, level)[0]
    if dim is None:
        flat = v.reshape((v.shape[0], -1))
        out = fn(flat, 1, False, largest)
        if keepdim:
            out = out.reshape((v.shape[0],) + (1,) * x.ndim)
        return wrap_out(out, level)
    axis = normalize_dim(dim, x.ndim) + 1 if x.ndim else 0
    if not x.ndim:
        return wrap_out(fn(v.reshape((-1, 1)), 1, False, largest).reshape((-1,)), level)
    return wrap_out(fn(v, axis, keepdim, largest), level)


@function_rule("index")
def _index(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    x, key = args
    keys = key if isinstance(key, tuple) else (key,)
    level = max(level, top_level(keys))
    vx, x_batched = unwrap(x, level)
    batched_keys = [unwrap(k, level)[1] for k in keys]
    if len(keys) == 1 and batched_keys[0] and keys[0].dtype.kind in "iu":
        vi = unwrap(keys[0], level)[0]  # one integer index per example: `x[i]`
        if not x_batched:
            return wrap_out(fn(x, (vi,)), level)
        rows = arange(vi.shape[0], device=vi.device).reshape((-1,) + (1,) * (vi.ndim - 1))
        return wrap_out(fn(vx, (rows, vi)), level)
    if any(batched_keys) or not x_batched:
        return per_example("index", lambda *xs: fn(xs[0], tuple(xs[1:])), level, (x, *keys))
    return fn(x, key)  # an op-level rule runs the indexing on the batch


@function_rule("gather")
def _gather(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    x, dim, index = args[:3]
    axis = normalize_dim(dim, x.ndim) + 1
    vx, vi = materialize(x, level), materialize(index, level)
    return wrap_out(fn(vx, axis, vi, **kwargs), level)


def _cross_entropy_like(fn: Callable, level: int, args: tuple, kwargs: dict, name: str) -> Any:
    """The per-example loss over class indices: rows of all examples in one call."""
    names = ("input", "target", "weight", "ignore_index", "reduction", "label_smoothing")
    given = dict(zip(names, args)) | kwargs
    x, target = given["input"], given["target"]
    weight = given.get("weight")
    simple = (
        isinstance(target, Tensor)
        and target.dtype.kind in "iu"
        and x.ndim in (1, 2)
        and not given.get("label_smoothing")
        and not isinstance(weight, Tensor)
        and given.get("size_average") is None
        and given.get("reduce") is None
        and unwrap(x, level)[1]
        and unwrap(target, level)[1]
    )
    if not simple:
        keys = list(given)
        return per_example(
            name, lambda *xs: fn(**dict(zip(keys, xs))), level, tuple(given.values())
        )
    vx, vt = unwrap(x, level)[0], unwrap(target, level)[0]
    classes = vx.shape[-1]
    ignore_index = given.get("ignore_index", -100)
    losses = fn(
        vx.reshape((-1, classes)), vt.reshape((-1,)), ignore_index=ignore_index, reduction="none"
    ).reshape(tuple(vt.shape))
    reduction = given.get("reduction", "mean")
    if reduction == "none" or x.ndim == 1 and reduction == "sum":
        return wrap_out(losses, level)
    kept = (vt != ignore_index).to(losses.dtype)
    if x.ndim > 1:
        losses, kept = losses.sum(1), kept.sum(1)
        if reduction == "sum":
            return wrap_out(losses, level)
    # The mean over the kept targets; nan where none is kept, with a zero gradient (PyTorch's).
    mean = where(kept == 0, float("nan"), losses / kept.clamp(min=1))
    return wrap_out(mean, level)


@function_rule("cross_entropy")
def _cross_entropy(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    return _cross_entropy_like(fn, level, args, kwargs, "cross_entropy")


@function_rule("nll_loss")
def _nll_loss(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    names = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction")
    given = dict(zip(names, args)) | kwargs
    given.setdefault("weight", None)
    ordered = tuple(given.get(n) for n in ("input", "target", "weight"))
    rest = {k: v for k, v in given.items() if k not in ("input", "target", "weight")}
    return _cross_entropy_like(fn, level, ordered, rest, "nll_loss")


@function_rule("argsort")
def _argsort(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    names = ("input", "dim", "descending")
    given = dict(zip(names, args)) | kwargs
    x = given.pop("input")
    dim = normalize_dim(given.pop("dim", -1), x.ndim) + 1 if x.ndim else None
    v = unwrap(x, level)[0]
    if dim is None:
        return wrap_out(fn(v.reshape((-1, 1)), 1, **given).reshape((-1,)), level)
    return wrap_out(fn(v, dim, **given), level)


@function_rule("nonzero")
def _nonzero(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    raise RuntimeError(
        "vmap: We do not support batching operators that can output dynamic shape. Attempted "
        "to vmap over aten::nonzero. Please file an issue at "
        "https://github.com/pytorch/pytorch/issues if you need this feature."
    )


INPLACE_MESSAGE = (
    "vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in "
    "extra_args that has more elements than `self`. This happened due to `other` being vmapped "
    "over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators "
    "instead of {name}. If said operator is being called inside the PyTorch framework, please "
    "file a bug report instead."
)


@function_rule("add_", "sub_", "mul_", "div_", "relu_", "clamp_", "zero_", "fill_", "copy_")
def _in_place(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    x, *others = args
    vx, x_batched = unwrap(x, level)
    if not x_batched:
        raise RuntimeError(INPLACE_MESSAGE.format(name=fn.__name__))
    values = [padded(o, level, x.ndim) if isinstance(o, Tensor) else o for o in others]
    fn(vx, *values, **kwargs)  # the batched value changes in place, and records its history
    return x


@function_rule("setitem")
def _setitem(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    x, key, value = args
    keys = key if isinstance(key, tuple) else (key,)
    vx, x_batched = unwrap(x, level)
    if not x_batched:
        raise RuntimeError(INPLACE_MESSAGE.format(name="setitem"))
    if any(unwrap(k, level)[1] for k in keys):
        raise RuntimeError("vmap: setitem with an index batched by vmap is not supported")
    fn(vx, (slice(None),) + keys, unwrap(value, level)[0])


@function_rule("fill_with")
def _fill_with(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    """In-place random fills (`uniform_`, `normal_`, ...) under vmap's randomness mode."""
    x, node, draw, *others = args
    mode = current_randomness()
    if mode == "error":
        raise RuntimeError(RANDOM_ERROR)
    vx, x_batched = unwrap(x, level)
    if not x_batched:
        raise RuntimeError(INPLACE_MESSAGE.format(name=node.op_name))
    if mode == "different":
        fn(vx, node, draw, *[padded(o, level, x.ndim) for o in others])
        return x
    if any(unwrap(o, level)[1] for o in others):
        raise RuntimeError(
            f"vmap: {node.op_name} with a batched argument and randomness='same' is not supported"
        )
    drawn = fn(zeros(*x.shape, dtype=x.dtype, device=x.device), node, draw, *others)
    vx.copy_(drawn)  # one draw, the same for every example
    return x


@function_rule("masked_fill")
def _masked_fill(fn: Callable, level: int, args: tuple, kwargs: dict) -> Any:
    given = dict(zip(("input", "mask", "value"), args)) | kwargs
    x, mask, value = given["input"], given["mask"], given["value"]
    if isinstance(value, Tensor) and unwrap(value, level)[1]:
        return where(mask, value, x)  # a fill value per example
    return wrap_out(fn(materialize(x, level), padded(mask, level, x.ndim), value), level)
