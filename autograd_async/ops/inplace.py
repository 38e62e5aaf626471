"""In-place ops: add_ sub_ mul_ div_ zero_ fill_ copy_ relu_ clamp_, `x[key] = v` and `x += y`.

Each bumps the version counter of the tensor's storage, which the saved-tensor check of `Op.saved`
reads. Under grad mode a non-leaf gets a new history: its `grad_fn` becomes the in-place op's node,
whose first edge points at the old `grad_fn`. The node's input 0 is a snapshot of the old tensor
(its history, and its data when backward needs the old values). When the tensor is a view, its base
gets an `AsStridedScatterBackward0` node that routes the gradient of the changed region to the
view's new history and the rest to the base's old one.
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..devices import DeviceError
from ..grad_mode import grad_enabled
from ..history import rebase_history
from ..tensor import Tensor, infer_array
from .arithmetic import AddBackward0, SubBackward0, div, mul
from .base import Op
from .dual import data_of, getitem, mul_const, xp_of, zeros_like
from .elementwise import clamp, relu
from .indexing import is_basic, normalize_key
from .promotion import _CATEGORY, result_type, scalar

LEAF_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_MESSAGE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
_TORCH_NAMES = {"b": "Bool", "i": "Long", "u": "Byte", "f": "Float", "c": "ComplexFloat"}


class ZeroBackward0(Op):
    __slots__ = ()
    op_name = "zero_"

    def forward(self, a: Any) -> Any:
        a[...] = 0
        return a

    def backward(self, g: Any) -> Any:
        return zeros_like(g)


class FillBackward0(Op):
    __slots__ = ()
    op_name = "fill_"

    def forward(self, a: Any, value: Any) -> Any:
        a[...] = value
        return a

    def backward(self, g: Any) -> tuple:
        return zeros_like(g), None


class CopyBackwards(Op):
    __slots__ = ()
    op_name = "copy_"

    def forward(self, a: Any, src: Any) -> Any:
        a[...] = src
        return a

    def backward(self, g: Any) -> tuple:
        return (zeros_like(g) if self.needs_input_grad[0] else None), g


class _IndexPut(Op):
    """`a[key] = value` written into `a`'s storage; value's gradient is the gradient at `key`."""

    __slots__ = ("_key",)
    # PyTorch frees the index tensors, or CopySlices' node, on release: a second backward fails.
    saved_slots = ("_key",)
    op_name = "index_put_"

    def forward(self, a: Any, value: Any, key: tuple) -> Any:
        self._key = key
        a[key] = value
        return a

    def backward(self, g: Any) -> tuple:
        self.check_released()
        key = self._key
        need = self.needs_input_grad
        ga = gv = None
        if need[0]:
            if isinstance(g, Tensor):
                keep = xp_of(g._data).ones(g.shape, g.dtype)
                keep[key] = 0
                ga = mul_const(g, keep)
            else:
                ga = xp_of(g).array(g, copy=True)
                ga[key] = 0
        if need[1]:
            gv = getitem(g, key)
        return ga, gv


class CopySlices(_IndexPut):
    __slots__ = ()


class IndexPutBackward0(_IndexPut):
    __slots__ = ()


class AsStridedScatterBackward0(Op):
    """A base whose view was changed in place: the region's gradient goes to the view's history."""

    __slots__ = ("_region",)
    saved_slots = ("_region",)  # PyTorch's CopySlices fails a second backward too
    op_name = "as_strided_scatter"

    def forward(self, base: Any, view: Any, region: Any) -> Any:
        self._region = region  # flat indices of the view's elements in the base
        return base  # the data is already in place: the view shares the base's storage

    def backward(self, g: Any) -> tuple:
        self.check_released()
        region = self._region
        need = self.needs_input_grad
        ga = gv = None
        if isinstance(g, Tensor):
            flat = g.reshape(-1)
            if need[0]:
                keep = xp_of(g._data).ones(g.shape, g.dtype)
                keep.reshape(-1)[region] = 0
                ga = mul_const(g, keep)
            if need[1]:
                gv = getitem(flat, (region,))
            return ga, gv
        flat = g.reshape(-1)
        if need[0]:
            ga = xp_of(g).array(g, copy=True)
            ga.reshape(-1)[region] = 0
        if need[1]:
            gv = flat[region]
        return ga, gv


# ------------------------------------------------------------------ helpers
def _check(t: Tensor) -> bool:
    """Refuse in-place changes of leaves that require grad; True when the change is recorded."""
    if not grad_enabled.get():
        return False
    if t.grad_fn is None and t._rg:
        raise RuntimeError(LEAF_MESSAGE)
    base = t._base
    if base is not None and t.grad_fn is not None and base.grad_fn is None and base._rg:
        raise RuntimeError(VIEW_OF_LEAF_MESSAGE)
    return True


def _check_result_dtype(t: Tensor, *others: Any) -> None:
    arrays = [data_of(o) if isinstance(o, Tensor) else scalar(o) for o in others]
    dtype = result_type(t._data, *arrays)
    if _CATEGORY[dtype.kind] > _CATEGORY[t.dtype.kind]:
        raise RuntimeError(
            f"result type {_TORCH_NAMES[dtype.kind]} can't be cast to the desired output type "
            f"{_TORCH_NAMES[t.dtype.kind]}"
        )


def _check_shape(t: Tensor, other: Any) -> None:
    shape = getattr(other, "shape", ())
    try:
        full = np.broadcast_shapes(t.shape, shape)
    except ValueError:
        full = None
    if full != t.shape:
        shown = list(full) if full is not None else list(shape)
        raise RuntimeError(
            f"output with shape {list(t.shape)} doesn't match the broadcast shape {shown}"
        )


def _snapshot(t: Tensor, copy: bool = False) -> Tensor:
    """The tensor before the change: its history, and its data copied when backward reads it."""
    data = t._data.copy() if copy else t._data
    return Tensor._wrap(data, t.device, t.grad_fn, t._output_nr)


def _is_rebased_view(t: Tensor) -> bool:
    base = t._base
    # A differentiable view, or a view of a tensor that needs no grad (it gains a history now);
    # a detached alias of a tensor that requires grad changes only itself.
    return base is not None and (t.grad_fn is not None or not base._rg)


def _region(view: Any, base: Any) -> Any:
    """Flat indices of `view`'s elements within the C-contiguous `base`."""
    xp = xp_of(base)
    if not base.flags.c_contiguous:
        raise RuntimeError(
            "in-place change of a view whose base is not contiguous is not supported; clone() first"
        )
    if xp is np:
        start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    else:
        start = view.data.ptr - base.data.ptr
    size = base.itemsize
    index = xp.asarray(start // size)
    for k, (n, stride) in enumerate(zip(view.shape, view.strides, strict=True)):
        steps = xp.arange(n) * (stride // size)
        index = index + steps.reshape((n,) + (1,) * (view.ndim - k - 1))
    return xp.broadcast_to(index, view.shape).copy()


def _commit(t: Tensor, result: Tensor) -> Tensor:
    """Give `t` the history of `result` (whose data is already in `t`'s storage), bump versions."""
    if _is_rebased_view(t):
        base = t._base
        region = _region(t._data, base._data)
        old = _snapshot(base)
        rebased = AsStridedScatterBackward0.apply(old, result, region=region)
        rebase_history(base, rebased.grad_fn)
    rebase_history(t, result.grad_fn)
    t._bump_version()
    return t


def _operand(t: Tensor, other: Any, move: bool = False) -> Any:
    if isinstance(other, Tensor):
        if other.device is not t.device:
            if not move:  # only copies cross devices, as in PyTorch
                raise DeviceError(
                    f"expected all tensors to be on the same device, but found at least two "
                    f"devices, {t.device} and {other.device}"
                )
            return other.to(t.device)
        return other
    if isinstance(other, Number):
        return scalar(other)
    return Tensor._wrap(infer_array(other, None, t.device), t.device)


def _recording(t: Tensor, *others: Any) -> bool:
    if isinstance(t._data, np.generic):
        # A 0-d gradient can arrive as a NumPy scalar, which has no storage to write into (nor
        # views to keep in sync): give the tensor a 0-d array first.
        t._data = np.array(t._data)
    record = _check(t)
    return record and (t._rg or any(isinstance(o, Tensor) and o._rg for o in others))


# ---------------------------------------------------------------- functions
def _additive(op: type, t: Tensor, other: Any, alpha: Any) -> Tensor:
    other = _operand(t, other)
    _check_result_dtype(t, other)
    _check_shape(t, other)
    if _recording(t, other):
        result = op.apply(_snapshot(t), other, alpha=alpha, out=t._data)
        return _commit(t, result)
    data, value = t._data, data_of(other)
    if alpha != 1:
        value = value * alpha
    ufunc = xp_of(data).add if op is AddBackward0 else xp_of(data).subtract
    ufunc(data, value, out=data)
    t._bump_version()
    return t


def add_(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """input += alpha * other, in place."""
    return _additive(AddBackward0, input, other, alpha)


def sub_(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """input -= alpha * other, in place."""
    return _additive(SubBackward0, input, other, alpha)


def _through_copy(t: Tensor, fn: Any, *others: Any) -> Tensor:
    """In place by computing out of place from a snapshot, then `copy_` (rules that save self)."""
    if _recording(t, *others):
        return copy_(t, fn(_snapshot(t, copy=True), *others))
    with _no_grad():
        out = fn(t, *others)
    t._data[...] = out._data
    t._bump_version()
    return t


def _no_grad() -> Any:
    from ..grad_mode import no_grad  # noqa: PLC0415

    return no_grad()


def mul_(input: Tensor, other: Any) -> Tensor:
    """input *= other, in place."""
    other = _operand(input, other)
    _check_result_dtype(input, other)
    _check_shape(input, other)
    if not _recording(input, other):
        xp_of(input._data).multiply(input._data, data_of(other), out=input._data)
        input._bump_version()
        return input
    return _through_copy(input, mul, other)


def div_(input: Tensor, other: Any) -> Tensor:
    """input /= other, in place (floating tensors)."""
    other = _operand(input, other)
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type "
            f"{_TORCH_NAMES[input.dtype.kind]}"
        )
    _check_shape(input, other)
    if not _recording(input, other):
        xp_of(input._data).divide(input._data, data_of(other), out=input._data)
        input._bump_version()
        return input
    return _through_copy(input, div, other)


def relu_(input: Tensor) -> Tensor:
    """max(input, 0), in place."""
    return _through_copy(input, relu)


def clamp_(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit values to [min, max], in place."""
    return _through_copy(input, lambda x: clamp(x, min, max))


def zero_(input: Tensor) -> Tensor:
    """Set every element to zero, in place."""
    if _recording(input):
        return _commit(input, ZeroBackward0.apply(_snapshot(input)))
    input._data[...] = 0
    input._bump_version()
    return input


def fill_(input: Tensor, value: Any) -> Tensor:
    """Set every element to `value`, in place."""
    value = scalar(value.item() if isinstance(value, Tensor) else value)
    _check_result_dtype(input, value)
    if _recording(input):
        return _commit(input, FillBackward0.apply(_snapshot(input), value))
    input._data[...] = value
    input._bump_version()
    return input


def copy_(input: Tensor, src: Any) -> Tensor:
    """Copy `src`'s values (broadcast, cast, from any device) into `input`."""
    src = _operand(input, src, move=True)
    _check_shape(input, src)
    if _recording(input, src):
        return _commit(input, CopyBackwards.apply(_snapshot(input), src))
    input._data[...] = data_of(src)
    input._bump_version()
    return input


def setitem(input: Tensor, key: Any, value: Any) -> None:
    """`input[key] = value`, recorded as CopySlices (basic keys) or IndexPutBackward0."""
    key = normalize_key(key, input._data)
    value = _operand(input, value, move=True)
    if isinstance(value, Tensor) and value.dtype != input.dtype:
        value = value.to(dtype=input.dtype)
    if _recording(input, value):
        op = CopySlices if is_basic(key) else IndexPutBackward0
        if not isinstance(value, Tensor):
            value = Tensor._wrap(infer_array(value, input.dtype, input.device), input.device)
        _commit(input, op.apply(_snapshot(input), value, key=key))
        return
    input._data[key] = data_of(value)
    input._bump_version()


def _iop(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return fn(self, other)

    return method


METHODS = {
    "add_": add_,
    "sub_": sub_,
    "mul_": mul_,
    "div_": div_,
    "relu_": relu_,
    "clamp_": clamp_,
    "zero_": zero_,
    "fill_": fill_,
    "copy_": copy_,
    "__setitem__": setitem,
    "__iadd__": _iop(add_),
    "__isub__": _iop(sub_),
    "__imul__": _iop(mul_),
    "__itruediv__": _iop(div_),
}
