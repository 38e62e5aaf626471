"""In-place changes of a tensor's shape and strides: `t_`, `transpose_`, `swapaxes_`,
`swapdims_`, `squeeze_`, `unsqueeze_`, `as_strided_`, `resize_`, `resize_as_` and `set_`.

The view forms take the view op's result as the tensor's new array and its node as the tensor's
new history (`TBackward0` after `t_()`), as PyTorch does: nothing is written, but the version
counter is bumped, so a saved copy of the old tensor is known to be stale. `resize_` and `set_`
change which memory the tensor shows; neither is differentiable.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..core.history import rebase_history
from ..core.op import Op
from ..core.tensor import Tensor
from ..devices import DeviceError
from ..grad_mode import grad_enabled
from .dual import xp_of
from .inplace import LEAF_MESSAGE, VIEW_OF_LEAF_MESSAGE
from .views import element_offset

RESIZE_GRAD_MESSAGE = "cannot resize variables that require grad"
SET_GRAD_MESSAGE = "derivative for set_ is not implemented"


def _refuse_leaf(t: Tensor) -> None:
    """PyTorch's refusal to change a leaf that requires grad, or a view of one, in place."""
    if not grad_enabled.get():
        return
    if t._rg and t.grad_fn is None:
        raise RuntimeError(LEAF_MESSAGE)
    base = t._base
    if base is not None and base._rg and base.grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_MESSAGE)


def _take_view(t: Tensor, result: Tensor) -> Tensor:
    """Make `t` show `result`'s array, with `result`'s node as its history."""
    t._data = result._data
    t._bump_version()
    if result._grad_fn is not None:
        rebase_history(t, result._grad_fn, result._output_nr)
    if t._base is not None:  # its history is the one just set, not a stale one to regenerate
        t._view_version = t._version_source._ver
    return t


def _view_in_place(name: str) -> Any:
    """`Tensor.<name>_`: the view op `name` applied to the tensor itself."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _refuse_leaf(self)
        return _take_view(self, getattr(Tensor, name)(self, *args, **kwargs))

    method.__name__ = name + "_"
    method.__doc__ = f"`{name}`, changing this tensor's shape and strides in place."
    return method


def _sizes(args: tuple) -> tuple[int, ...]:
    """`resize_(2, 3)` or `resize_((2, 3))`: the sizes, all non-negative."""
    sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    shape = tuple(int(n) for n in sizes)
    if any(n < 0 for n in shape):
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}"
        )
    return shape


def _storage(t: Tensor) -> tuple[Any, int]:
    """The flat memory `t` lives in, and `t`'s element offset in it; a copy when `t`'s memory
    has no flat C-ordered form of its own."""
    base = t._base
    source = t._data if base is None else base._data
    if not source.flags.c_contiguous:
        return t._data.reshape(-1), 0  # a copy for a non-contiguous array
    return source.reshape(-1), (0 if base is None else element_offset(t._data, source))


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give the tensor the shape `sizes`, keeping its leading elements in memory order.

    A shape that fits in the tensor's memory shows that memory; a larger one gets new memory with
    the old elements first and zeros after (PyTorch leaves them uninitialised).
    """
    if self._rg:
        raise RuntimeError(RESIZE_GRAD_MESSAGE)
    shape = _sizes(sizes)
    count = math.prod(shape)
    flat, offset = _storage(self)
    if offset + count <= flat.size:
        data = flat[offset : offset + count].reshape(shape)
    else:
        data = xp_of(flat).zeros(count, dtype=flat.dtype)
        kept = flat[offset : offset + count]
        data[: kept.size] = kept
        data = data.reshape(shape)
        self._base = None  # new memory: no longer shared with a base
        self._version_source = None
    self._data = data
    self._bump_version()
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """`resize_` to `the_template`'s shape."""
    return resize_(self, tuple(the_template.shape))


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """Deprecated in PyTorch: the tensor in the shape `sizes`, which must hold as many elements
    (differentiable, unlike `resize_`)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _same_count_reshape(self, _sizes(sizes))


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated in PyTorch: `resize` to `tensor`'s shape."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _same_count_reshape(self, tuple(tensor.shape))


def _same_count_reshape(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    count, have = math.prod(shape), t.numel()
    if count != have:
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, shape))} ({count} elements in total), but "
            f"the given tensor has a size of {'x'.join(map(str, t.shape))} ({have} elements). "
            "autograd's resize can only change the shape of a given tensor, while preserving "
            "the number of elements. "
        )
    return t.reshape(shape)


class SetBackward(Op):
    """The node of a recorded `set_`: PyTorch has no derivative for it, and its backward says
    so."""

    __slots__ = ()
    op_name = "set_"

    def name(self) -> str:
        """PyTorch's name for this node, which it writes in C++."""
        return "torch::autograd::NotImplemented"

    def forward(self, a: Any, source: Any) -> Any:
        return source

    def backward(self, g: Any) -> Any:
        raise RuntimeError(SET_GRAD_MESSAGE)


def set_(
    self: Tensor,
    source: Tensor | None = None,
    storage_offset: int = 0,
    size: Any = None,
    stride: Any = None,
) -> Tensor:
    """Make the tensor show `source`'s memory (all of it, or `size`/`stride` from
    `storage_offset`); without `source`, an empty tensor."""
    _refuse_leaf(self)
    if source is None:
        data = xp_of(self._data).empty(0, dtype=self._data.dtype)
    else:
        if not isinstance(source, Tensor):
            raise TypeError(
                f"set_(): argument 'source' must be Tensor, not {type(source).__name__}"
            )
        if source.dtype != self.dtype:
            raise RuntimeError(
                f"Could not set tensor of type {source.dtype} to a tensor of type {self.dtype}"
            )
        if source.device is not self.device:
            raise DeviceError(
                f"set_(): expected the source on {self.device}, but it is on {source.device}"
            )
        data = source._data
        if size is not None:
            data = _strided(source, storage_offset, size, stride)
    recording = grad_enabled.get() and (self._rg or (source is not None and source._rg))
    if recording:
        node = SetBackward.apply(self, source if source is not None else self.detach()).grad_fn
        rebase_history(self, node)
    self._data = data
    self._base = None
    self._version_source = None
    self._bump_version()
    return self


def _strided(source: Tensor, offset: int, size: Any, stride: Any) -> Any:
    """`size` and `stride` (elements) from `offset` in `source`'s memory, PyTorch's bounds check
    first."""
    size = tuple(int(n) for n in size)
    stride = tuple(int(s) for s in (stride if stride is not None else _contiguous(size)))
    flat, own = _storage(source)
    itemsize = flat.itemsize
    needed = (offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) if all(size) else 0
    if needed > flat.size - own:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of "
            f"bounds for storage of size {(flat.size - own) * itemsize}"
        )
    start = flat[own + offset :]
    strides = tuple(s * itemsize for s in stride)
    return xp_of(flat).lib.stride_tricks.as_strided(start, shape=size, strides=strides)


def _contiguous(size: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


# Installed beside their view ops, by `ops` (which knows both).
VIEW_FORMS = {
    name + "_": _view_in_place(name)
    for name in ("t", "transpose", "swapaxes", "swapdims", "squeeze", "unsqueeze", "as_strided")
}
METHODS = {
    "resize_": resize_,
    "resize_as_": resize_as_,
    "resize": resize,
    "resize_as": resize_as,
    "set_": set_,
}
