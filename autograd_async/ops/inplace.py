"""In-place ops: add_ sub_ mul_ div_ zero_ fill_ copy_ relu_ clamp_, `x[key] = v` and `x += y`.

Each bumps the version counter of the tensor's storage, which the saved-tensor check of `Op.saved`
reads. Under grad mode a tensor gets a new history (`rebase_history`): its `grad_fn` becomes the
node of the op PyTorch names (`MulBackward0` for `mul_`), whose first edge points at the old
`grad_fn`. The node's input 0 is a snapshot of the old tensor (its history, and its data when
backward needs the old values). When the tensor is a view, its base gets a `CopySlices` node
wrapping that node, and the view's history is regenerated from the base (`AsStridedBackward0`),
as PyTorch does.
"""

from __future__ import annotations

from numbers import Number
from typing import Any

import numpy as np

from ..batching import batchable
from ..core.history import forward_name, rebase_history, refresh_if_stale
from ..core.op import Op, broadcast_error, torch_type_name
from ..core.tensor import Tensor, infer_array
from ..devices import DeviceError, enters_device
from ..grad_mode import grad_enabled, no_grad
from .arithmetic import AddBackward0, SubBackward0, div, mul
from .copy_slices import CopySlices
from .dual import data_of, getitem, mul_const, xp_of, zeros_like
from .elementwise import clamp, relu
from .indexing import index, is_basic, normalize_key, split_selects
from .promotion import _CATEGORY, result_type, scalar
from .views import (
    AsStridedBackward0,
    element_offset,
    element_strides,
    regenerate_view,
    region_indices,
    require_contiguous_storage,
)

LEAF_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_MESSAGE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
NO_GRAD_VIEW_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
INFERENCE_VIEW_MESSAGE = (
    "A view was created in inference mode and is being modified inplace in normal mode. Given "
    "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code "
    "by moving both the view and the inplace either both inside the inference_mode block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)
MULTI_VIEW_MESSAGE = (
    "Output {nr} of {name} is a view and is being modified inplace. This view is the output of a "
    "function that returns multiple views. Such functions do not allow the output views to be "
    "modified inplace. You should replace the inplace operation by an out-of-place one."
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


class FillBackward2(Op):
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

    def name(self) -> str:
        """PyTorch's name for this node, which it writes in C++."""
        return "torch::autograd::CopyBackwards"

    def forward(self, a: Any, src: Any) -> Any:
        a[...] = src
        return a

    def backward(self, g: Any) -> tuple:
        return (zeros_like(g) if self.needs_input_grad[0] else None), g


class NoGradientBackward(Op):
    """The history of a tensor overwritten in place by an op without a gradient (`eq_`): the
    old values get a zero gradient, as PyTorch's `EqBackward0` gives them."""

    __slots__ = ("_forward_name",)
    op_name = "no_gradient"

    def name(self) -> str:
        """PyTorch's name: the op's, `EqBackward0` for `eq_`."""
        return "".join(part.capitalize() for part in self._forward_name.split("_")) + "Backward0"

    def forward(self, a: Any, forward_name: str) -> Any:
        self._forward_name = forward_name
        return a

    def backward(self, g: Any) -> Any:
        return zeros_like(g)


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


class IndexPutBackward0(_IndexPut):
    __slots__ = ()


# ------------------------------------------------------------------ helpers
def _check(t: Tensor, overlap_ok: bool = False) -> bool:
    """Refuse in-place changes PyTorch refuses; True when the change is to be recorded.

    Only `fill_` and `zero_` may write to elements that share memory (an expanded tensor).
    """
    data = t._data
    if not overlap_ok and any(s == 0 and n > 1 for n, s in zip(data.shape, data.strides)):
        raise RuntimeError(OVERLAP_MESSAGE)
    if not grad_enabled.get():
        return False
    if t.grad_fn is None and t._rg:
        raise RuntimeError(LEAF_MESSAGE)
    base = t._base
    if base is not None:
        made_without_grad = getattr(t, "_no_grad_view", None)
        if t.grad_fn is None and made_without_grad and base._rg:  # PyTorch checks this first
            raise RuntimeError(
                INFERENCE_VIEW_MESSAGE if made_without_grad == "inference" else NO_GRAD_VIEW_MESSAGE
            )
        # Whether or not the view was taken before the base required grad.
        if base.grad_fn is None and base._rg:
            raise RuntimeError(VIEW_OF_LEAF_MESSAGE)
        fn = t.grad_fn
        if fn is None and base._rg:  # not stale (refreshed above): made under no_grad
            raise RuntimeError(NO_GRAD_VIEW_MESSAGE)
        if fn is not None and getattr(fn, "multi_output_view", False):
            raise RuntimeError(MULTI_VIEW_MESSAGE.format(nr=t._output_nr, name=forward_name(fn)))
        require_contiguous_storage(base._data, "an in-place change of a view")
    return True


def _check_result_dtype(t: Tensor, *others: Any) -> None:
    arrays = [data_of(o) if isinstance(o, Tensor) else scalar(o) for o in others]
    dtype = result_type(t._data, *arrays)
    if _CATEGORY[dtype.kind] > _CATEGORY[t.dtype.kind]:
        raise RuntimeError(
            f"result type {_TORCH_NAMES[dtype.kind]} can't be cast to the desired output type "
            f"{_TORCH_NAMES[t.dtype.kind]}"
        )


def _check_shape(t: Tensor, other: Any, op_name: str) -> None:
    shape = getattr(other, "shape", ())
    try:
        full = np.broadcast_shapes(t.shape, shape)
    except ValueError:
        raise broadcast_error(op_name, (t._data, other)) from None
    if full != t.shape:
        shown = list(full)
        raise RuntimeError(
            f"output with shape {list(t.shape)} doesn't match the broadcast shape {shown}"
        )


def _snapshot(t: Tensor, copy: bool = False) -> Tensor:
    """The tensor before the change: its history, and its data copied when backward reads it."""
    data = t._data.copy() if copy else t._data
    old = Tensor._wrap(data, t.device, t.grad_fn, t._output_nr)
    base = t._base
    if base is not None and base._rg and not old._rg:
        # A view without history of a base with one: the region's old values come from the
        # base, so the op must compute their gradient (CopySlices routes it there).
        old._rg = True
    return old


def _commit(t: Tensor, node: Any) -> Tensor:
    """Give `t`, whose storage holds the new values, the history `node`; bump its version.

    The version first: the view's regenerated history is that of the changed base.
    """
    t._bump_version()
    if t._base is not None:
        rebase_view(t, node)
    else:
        rebase_history(t, node)
    return t


def rebase_view(view: Tensor, fn: Any) -> None:
    """The base takes `CopySlices(fn)`; the view becomes a strided view of its new history."""
    base = view._base
    storage = base._data
    offset = element_offset(view._data, storage)
    region = region_indices(xp_of(storage), view.shape, element_strides(view._data), offset)
    rebase_history(base, CopySlices(base, fn, region))
    regenerate_view(view)


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


def _recording(t: Tensor, *others: Any, overlap_ok: bool = False) -> bool:
    if isinstance(t._data, np.generic):
        # A 0-d gradient can arrive as a NumPy scalar, which has no storage to write into (nor
        # views to keep in sync): give the tensor a 0-d array first.
        t._data = np.array(t._data)
    if t._base is not None:
        refresh_if_stale(t)
    record = _check(t, overlap_ok)
    return record and (t._rg or any(isinstance(o, Tensor) and o._rg for o in others))


# ---------------------------------------------------------------- functions
def _additive(op: type[Op], t: Tensor, other: Any, alpha: Any) -> Tensor:
    other = _operand(t, other)
    _check_result_dtype(t, other)
    _check_shape(t, other, op.op_name + "_")
    if _recording(t, other):
        result = op.apply(_snapshot(t), other, alpha=alpha, out=t._data)
        return _commit(t, result.grad_fn)
    data, value = t._data, data_of(other)
    if alpha != 1:
        value = value * alpha
    ufunc = xp_of(data).add if op is AddBackward0 else xp_of(data).subtract
    ufunc(data, value, out=data)
    t._bump_version()
    return t


@enters_device
@batchable
def add_(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """input += alpha * other, in place."""
    return _additive(AddBackward0, input, other, alpha)


@enters_device
@batchable
def sub_(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """input -= alpha * other, in place."""
    return _additive(SubBackward0, input, other, alpha)


def _through_copy(t: Tensor, fn: Any, *others: Any) -> Tensor:
    """In place by computing out of place from a copy of the old values, then writing back.

    The tensor's new history is the out-of-place op's node (`MulBackward0` for `mul_`), as in
    PyTorch; its rules may read the old values, which the copy keeps.
    """
    if _recording(t, *others):
        result = fn(_snapshot(t, copy=True), *others)
        t._data[...] = result._data
        return _commit(t, result.grad_fn)
    with _no_grad():
        out = fn(t, *others)
    t._data[...] = out._data
    t._bump_version()
    return t


def _no_grad() -> Any:
    return no_grad()


@enters_device
@batchable
def mul_(input: Tensor, other: Any) -> Tensor:
    """input *= other, in place."""
    other = _operand(input, other)
    _check_result_dtype(input, other)
    _check_shape(input, other, "mul_")
    if not _recording(input, other):
        xp_of(input._data).multiply(input._data, data_of(other), out=input._data)
        input._bump_version()
        return input
    return _through_copy(input, mul, other)


@enters_device
@batchable
def div_(input: Tensor, other: Any) -> Tensor:
    """input /= other, in place (floating tensors)."""
    other = _operand(input, other)
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type "
            f"{_TORCH_NAMES[input.dtype.kind]}"
        )
    _check_shape(input, other, "div_")
    if not _recording(input, other):
        xp_of(input._data).divide(input._data, data_of(other), out=input._data)
        input._bump_version()
        return input
    return _through_copy(input, div, other)


@enters_device
@batchable
def relu_(input: Tensor) -> Tensor:
    """max(input, 0), in place."""
    return _through_copy(input, relu)


@enters_device
@batchable
def clamp_(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Limit values to [min, max], in place."""
    return _through_copy(input, lambda x: clamp(x, min, max))


@enters_device
@batchable
def zero_(input: Tensor) -> Tensor:
    """Set every element to zero, in place."""
    if _recording(input, overlap_ok=True):
        return _commit(input, ZeroBackward0.apply(_snapshot(input)).grad_fn)
    input._data[...] = 0
    input._bump_version()
    return input


@enters_device
@batchable
def fill_(input: Tensor, value: Any) -> Tensor:
    """Set every element to `value`, in place."""
    value = scalar(value.item() if isinstance(value, Tensor) else value)
    _check_result_dtype(input, value)
    if _recording(input, overlap_ok=True):
        return _commit(input, FillBackward2.apply(_snapshot(input), value).grad_fn)
    input._data[...] = value
    input._bump_version()
    return input


@enters_device
@batchable
def copy_(input: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copy `src`'s values (broadcast, cast, from any device) into `input`; `non_blocking` is
    taken for PyTorch's signature (copies are ordered on the streams here)."""
    src = _operand(input, src, move=True)
    _check_shape(input, src, "copy_")
    if _recording(input, src):
        return _commit(input, CopyBackwards.apply(_snapshot(input), src).grad_fn)
    input._data[...] = data_of(src)
    input._bump_version()
    return input


@enters_device
@batchable
def setitem(input: Tensor, key: Any, value: Any) -> None:
    """`input[key] = value`: basic keys copy into a view of the region (the base's history
    becomes CopySlices, as PyTorch's), other keys are recorded as IndexPutBackward0."""
    if isinstance(input._data, np.generic):
        input._data = np.array(input._data)  # a 0-d gradient as a NumPy scalar: give it storage
    key = normalize_key(key, input._data, input.device)
    split = split_selects(key)
    if split is not None:  # PyTorch's order: the integers select a view, the rest writes it
        selects, rest = split
        setitem(index(input, selects), rest, value)
        return
    value = _operand(input, value, move=True)
    if isinstance(value, Tensor) and value.dtype != input.dtype:
        value = value.to(dtype=input.dtype)
    if is_basic(key):
        # The region is checked and written like any in-place change of a view.
        region = index(input, key)
        copy_(region, value)
        if input._base is not None and type(region.grad_fn) is AsStridedBackward0:
            regenerate_view(input)  # a view itself: it hangs off its base's new history
        return
    if _recording(input, value):
        if not isinstance(value, Tensor):
            value = Tensor._wrap(infer_array(value, input.dtype, input.device), input.device)
        _commit(input, IndexPutBackward0.apply(_snapshot(input), value, key=key).grad_fn)
        return
    input._data[key] = data_of(value)
    input._bump_version()


def _iop(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, Number)):
            return NotImplemented
        return fn(self, other)

    return method


def _tensors_in(args: tuple) -> tuple:
    """The tensors among `args`, also those inside a tuple or list (`index_put_`'s indices)."""
    found = []
    for a in args:
        if isinstance(a, Tensor):
            found.append(a)
        elif isinstance(a, (tuple, list)):
            found.extend(x for x in a if isinstance(x, Tensor))
    return tuple(found)


# In-place forms PyTorch does not record: the tensor keeps its history (and so the gradient its
# old values had), where other ops without a gradient give a zero one.
_UNRECORDED = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})
# In-place forms whose result must already have the tensor's dtype (PyTorch casts no other way).
_EXACT_DTYPE = frozenset({"float_power"})


def in_place_form(name: str, function: Any = None) -> Any:
    """`Tensor.<name>_`: the out-of-place method's (or `function`'s) result written back, with
    its history."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        compute = getattr(Tensor, name) if function is None else function
        recording = _recording(self, *_tensors_in((*args, *kwargs.values())))
        if recording:
            result = compute(_snapshot(self, copy=True), *args, **kwargs)
        else:
            with _no_grad():
                result = compute(self, *args, **kwargs)
        if name in _EXACT_DTYPE and result.dtype != self.dtype:
            raise RuntimeError(
                f"the base given to {name}_ has dtype {torch_type_name(self.dtype)} but the "
                f"operation's result requires dtype {torch_type_name(result.dtype)}"
            )
        if _CATEGORY[result.dtype.kind] > _CATEGORY[self.dtype.kind]:
            raise RuntimeError(
                f"result type {_TORCH_NAMES[result.dtype.kind]} can't be cast to the desired "
                f"output type {_TORCH_NAMES[self.dtype.kind]}"
            )
        if result.shape != self.shape:
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(result.shape)}"
            )
        self._data[...] = result._data
        if recording:
            node = result.grad_fn
            if node is None and name in _UNRECORDED:
                self._bump_version()
                return self
            if node is None:  # a result without a gradient (a comparison): zero for the old values
                node = NoGradientBackward.apply(_snapshot(self), forward_name=name).grad_fn
            return _commit(self, node)
        self._bump_version()
        return self

    method.__name__ = name + "_"
    method.__doc__ = f"`{name}`, in place."
    return method


# PyTorch's in-place forms of ops that keep the tensor's shape; each is installed where its
# out-of-place method exists.
_IN_PLACE_FORMS = (
    "abs",
    "absolute",
    "acos",
    "acosh",
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmm",
    "addmv",
    "addr",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "baddbmm",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clamp_max",
    "clamp_min",
    "clip",
    "conj_physical",
    "copysign",
    "cos",
    "cosh",
    "cumprod",
    "cumsum",
    "deg2rad",
    "divide",
    "eq",
    "erf",
    "erfinv",
    "exp",
    "expm1",
    "fix",
    "float_power",
    "floor",
    "floor_divide",
    "fmod",
    "frac",
    "gcd",
    "ge",
    "greater",
    "greater_equal",
    "gt",
    "heaviside",
    "hypot",
    "igamma",
    "igammac",
    "index_fill",
    "index_put",
    "index_reduce",
    "lcm",
    "ldexp",
    "le",
    "lerp",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "masked_scatter",
    "multiply",
    "nan_to_num",
    "ne",
    "neg",
    "negative",
    "nextafter",
    "not_equal",
    "pow",
    "put",
    "rad2deg",
    "reciprocal",
    "remainder",
    "renorm",
    "round",
    "rsqrt",
    "scatter_reduce",
    "sgn",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "tril",
    "triu",
    "true_divide",
    "trunc",
    "xlogy",
)
IN_PLACE_FORMS = {name + "_": in_place_form(name) for name in _IN_PLACE_FORMS}

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
