"""Batching rules of the common ops: elementwise, reductions, views and shape ops, indexing.

Each rule runs the op once on the values of its inputs at the vmap level (dim 0 the batch),
shifting the dims it names past the batch dim, so no rule ever reduces over a batch.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from ..ops import (
    activations,
    arithmetic,
    elementwise,
    indexing,
    linalg,
    nn_ops,
    pointwise,
    rearrange,
    reduction,
    scan,
    shape,
    sorting,
    special,
    transfer,
    triangular,
    views,
)
from .batched import unwrap
from .dispatch import materialize, op_rule, per_example, wrap_out


def _subclasses(*bases: type) -> list[type]:
    found = []
    todo = list(bases)
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def padded(x: Tensor, level: int, rank: int) -> Tensor:
    """The value of `x` at `level`, length-1 dims inserted after the batch dim up to `rank`."""
    v, is_batched = unwrap(x, level)
    if is_batched and x.ndim < rank:
        v = v.reshape((v.shape[0],) + (1,) * (rank - x.ndim) + tuple(v.shape[1:]))
    return v


def aligned(inputs: tuple, level: int) -> list:
    """The values at `level`, batched ones padded with length-1 dims to the largest example rank,
    so that batch dims line up and example dims broadcast as they would for one example."""
    rank = max(x.ndim for x in inputs if isinstance(x, Tensor))
    return [padded(x, level, rank) if isinstance(x, Tensor) else x for x in inputs]


_ELEMENTWISE = _subclasses(special._Unary, special._ZeroSlope, activations._Activation)
_ELEMENTWISE += [
    elementwise.AbsBackward0,
    elementwise.ExpBackward0,
    elementwise.LogBackward0,
    elementwise.SqrtBackward0,
    elementwise.ReciprocalBackward0,
    elementwise.SinBackward0,
    elementwise.CosBackward0,
    elementwise.TanhBackward0,
    elementwise.SigmoidBackward0,
    elementwise.ReluBackward0,
    elementwise.ClampBackward0,
    elementwise.ClampBackward1,
    elementwise.MaximumBackward0,
    elementwise.MinimumBackward0,
    elementwise.WhereBackward0,
    arithmetic.AddBackward0,
    arithmetic.SubBackward0,
    arithmetic.RsubBackward1,
    arithmetic.MulBackward0,
    arithmetic.DivBackward0,
    arithmetic.NegBackward0,
    arithmetic.PowBackward0,
    arithmetic.PowBackward1,
    arithmetic.PowBackward2,
    nn_ops.ErfBackward0,
    nn_ops.GeluBackward0,
    shape.CloneBackward0,
    transfer.ToCopyBackward0,
    triangular.TrilBackward0,
    triangular.TriuBackward0,
    pointwise.Atan2Backward0,
    pointwise.FmodBackward0,
    pointwise.HypotBackward0,
    pointwise.LerpBackward0,
    pointwise.RemainderBackward0,
    pointwise.XlogyBackward0,
]


@op_rule(*_ELEMENTWISE)
def _elementwise(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    return wrap_out(cls.apply(*aligned(inputs, level), **kwargs), level)


def _shift(dims: Any, ndim: int) -> tuple[int, ...]:
    """Example dims (None: all of them) as dims of the batched value."""
    if dims is None:
        return tuple(range(1, ndim + 1))
    if isinstance(dims, int):
        return (dims + 1,)
    return tuple(d + 1 for d in dims)


@op_rule(reduction.SumBackward0, reduction.MeanBackward0)
def _full_reduction(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    (x,) = inputs
    target = reduction.SumBackward1 if cls is reduction.SumBackward0 else reduction.MeanBackward1
    v = unwrap(x, level)[0]
    return wrap_out(target.apply(v, dims=_shift(None, x.ndim), keepdim=False), level)


@op_rule(
    reduction.SumBackward1,
    reduction.MeanBackward1,
    reduction.AmaxBackward0,
    reduction.AminBackward0,
    reduction.MaxBackward1,
    reduction.MinBackward1,
    reduction.LogsumexpBackward0,
    reduction.VarBackward0,
    reduction.StdBackward0,
    rearrange.FlipBackward0,
    linalg.NormBackward1,
)
def _dims_reduction(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x = inputs[0]
    kwargs = dict(kwargs, dims=_shift(kwargs.get("dims"), x.ndim))
    return wrap_out(cls.apply(unwrap(x, level)[0], *inputs[1:], **kwargs), level)


@op_rule(
    reduction.MaxBackward0,
    reduction.MinBackward0,
    nn_ops.SoftmaxBackward0,
    nn_ops.LogSoftmaxBackward0,
    scan.CumsumBackward0,
    scan.CumprodBackward0,
    scan.ProdBackward1,
    views.UnbindBackward0,
    sorting.SortBackward0,
    sorting.SortBackward1,
    sorting.KthvalueBackward0,
    sorting.TopkBackward0,
    shape.SplitBackward0,
    shape.SplitWithSizesBackward0,
)
def _one_dim(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x = inputs[0]
    kwargs = dict(kwargs, dim=kwargs["dim"] + 1)
    return wrap_out(cls.apply(unwrap(x, level)[0], *inputs[1:], **kwargs), level)


@op_rule(shape.TransposeBackward0)
def _transpose(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    v = unwrap(inputs[0], level)[0]
    return wrap_out(cls.apply(v, dim0=kwargs["dim0"] + 1, dim1=kwargs["dim1"] + 1), level)


@op_rule(views.DiagonalBackward0)
def _diagonal(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    v = unwrap(inputs[0], level)[0]
    kwargs = dict(kwargs, dim1=kwargs["dim1"] + 1, dim2=kwargs["dim2"] + 1)
    return wrap_out(cls.apply(v, **kwargs), level)


@op_rule(shape.TBackward0)
def _t(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x = inputs[0]
    v = unwrap(x, level)[0]
    if x.ndim < 2:
        return x  # PyTorch's t() of a vector is the vector
    return wrap_out(shape.TransposeBackward0.apply(v, dim0=1, dim1=2), level)


@op_rule(shape.PermuteBackward0)
def _permute(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    v = unwrap(inputs[0], level)[0]
    return wrap_out(cls.apply(v, dims=(0,) + _shift(kwargs["dims"], 0)), level)


@op_rule(
    shape.ViewBackward0,
    shape.UnsafeViewBackward0,
    shape.SqueezeBackward0,
    shape.SqueezeBackward1,
    shape.SqueezeBackward2,
    shape.UnsqueezeBackward0,
)
def _reshape(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    v = unwrap(inputs[0], level)[0]
    new = (v.shape[0],) + tuple(kwargs["shape"])
    # The value may not be laid out as a view allows (a permuted batch): reshape copies then.
    return wrap_out(shape.reshape(v, new), level)


@op_rule(shape.ExpandBackward0)
def _expand(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x = inputs[0]
    target = tuple(kwargs["shape"])
    v = padded(x, level, len(target))
    return wrap_out(cls.apply(v, shape=(v.shape[0],) + target), level)


@op_rule(rearrange.RepeatBackward0)
def _repeat(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    x = inputs[0]
    repeats = tuple(kwargs["repeats"])
    v = padded(x, level, len(repeats))
    return wrap_out(cls.apply(v, repeats=(1,) + repeats), level)


@op_rule(rearrange.RollBackward0)
def _roll(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    if kwargs.get("dims") is None:
        return per_example(cls.op_name, lambda *xs: cls.apply(*xs, **kwargs), level, inputs)
    v = unwrap(inputs[0], level)[0]
    return wrap_out(cls.apply(v, shifts=kwargs["shifts"], dims=_shift(kwargs["dims"], 0)), level)


@op_rule(shape.CatBackward0, shape.StackBackward0)
def _cat(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    values = [materialize(x, level) for x in inputs]
    return wrap_out(cls.apply(*values, dim=kwargs["dim"] + 1), level)


def _index_arrays(key: tuple) -> list[int]:
    return [i for i, k in enumerate(key) if not isinstance(k, (int, slice, type(None), type(...)))]


@op_rule(indexing.SelectBackward0, indexing.SliceBackward0, indexing.IndexBackward0)
def _index(cls: type[Op], level: int, inputs: tuple, kwargs: dict) -> Any:
    key = tuple(kwargs["key"])
    arrays = _index_arrays(key)
    # NumPy moves advanced indices that are not next to each other to the front: loop then.
    if arrays and arrays != list(range(arrays[0], arrays[-1] + 1)):
        return per_example(cls.op_name, lambda *xs: cls.apply(*xs, key=key), level, inputs)
    v = unwrap(inputs[0], level)[0]
    return wrap_out(cls.apply(v, key=(slice(None),) + key), level)
