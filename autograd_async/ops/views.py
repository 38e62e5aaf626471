"""View ops with PyTorch's view semantics: narrow, select, view_as, unbind, diagonal, as_strided.

A view shares its base's storage and version counter (`Op.is_view`). `as_strided` and the view
geometry helpers here also serve in-place ops on views: after one, the view's history is
regenerated as an `AsStridedBackward0` of its base, as PyTorch regenerates it.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.history import rebase_history, refresh_if_stale  # noqa: F401 - re-exported
from ..core.op import Op
from ..core.tensor import Tensor
from ..devices import data_ptr
from .dual import xp_of
from .indexing import IndexAccumulateBackward0, SelectBackward0, SliceBackward0, scatter_into_zeros
from .reduction import normalize_dim
from .shape import stack, view


# ------------------------------------------------------------------- geometry
def element_strides(array: Any) -> tuple[int, ...]:
    """An array's strides counted in elements, as PyTorch's `stride()`."""
    size = array.itemsize
    return tuple(s // size for s in array.strides)


def element_offset(array: Any, base: Any) -> int:
    """How many elements after the start of `base`'s storage `array` starts."""
    return (data_ptr(array) - data_ptr(base)) // base.itemsize


def region_indices(xp: Any, shape: tuple, strides: tuple, offset: int) -> Any:
    """Flat indices, into a C-contiguous storage, of the elements of a strided view."""
    index = xp.asarray(offset)
    for k, (n, stride) in enumerate(zip(shape, strides, strict=True)):
        steps = xp.arange(n) * stride
        index = index + steps.reshape((n,) + (1,) * (len(shape) - k - 1))
    return xp.broadcast_to(index, tuple(shape)).copy()


def require_contiguous_storage(base: Any, what: str) -> None:
    """Strided views are computed over a C-contiguous storage; refuse others clearly."""
    if not base.flags.c_contiguous:
        raise RuntimeError(
            f"{what} of a tensor whose storage is not contiguous is not supported; clone() first"
        )


# ------------------------------------------------------------------------ ops
class AsStridedBackward0(Op):
    """A strided view of a C-contiguous input; backward adds the gradient at the view's places."""

    __slots__ = ("_region", "_shape")
    op_name = "as_strided"
    is_view = True

    def forward(self, a: Any, size: tuple, stride: tuple, storage_offset: int) -> Any:
        xp = xp_of(a)
        self._shape = a.shape
        self._region = region_indices(xp, size, stride, storage_offset)
        flat = a.reshape(-1)[storage_offset:]
        strides = tuple(s * a.itemsize for s in stride)
        return xp.lib.stride_tricks.as_strided(flat, shape=tuple(size), strides=strides)

    def backward(self, g: Any) -> Any:
        numel = 1
        for n in self._shape:
            numel *= n
        key = (self._region.reshape(-1),)
        if isinstance(g, Tensor):
            flat = IndexAccumulateBackward0.apply(g.reshape(-1), key=key, shape=(numel,))
            return flat.reshape(self._shape)
        flat = scatter_into_zeros(g.reshape(-1), key, (numel,), accumulate=True)
        return flat.reshape(self._shape)


class DiagonalBackward0(Op):
    """The diagonal of two dimensions as a view, whatever the input's strides."""

    __slots__ = ("_args", "_shape")
    op_name = "diagonal"
    is_view = True

    def forward(self, a: Any, offset: int, dim1: int, dim2: int) -> Any:
        self._args = (offset, dim1, dim2)
        self._shape = a.shape
        return diagonal_view(a, offset, dim1, dim2)

    def backward(self, g: Any) -> Any:
        shape = self._shape
        if isinstance(g, Tensor):
            # The diagonal's places in a C-contiguous array of the input's shape.
            numbered = xp_of(g._data).arange(math.prod(shape)).reshape(shape)
            key = (diagonal_view(numbered, *self._args).reshape(-1),)
            flat = IndexAccumulateBackward0.apply(g.reshape(-1), key=key, shape=(math.prod(shape),))
            return flat.reshape(shape)
        out = xp_of(g).zeros(shape, g.dtype)
        diagonal_view(out, *self._args)[...] = g
        return out


def diagonal_view(a: Any, offset: int, dim1: int, dim2: int) -> Any:
    """A writable view of the diagonal of `a` (NumPy's `diagonal` returns a read-only one)."""
    shape, strides = a.shape, a.strides
    start = [slice(None)] * a.ndim
    if offset >= 0:
        length = max(0, min(shape[dim1], shape[dim2] - offset))
        start[dim2] = slice(min(offset, shape[dim2]), None)
    else:
        length = max(0, min(shape[dim1] + offset, shape[dim2]))
        start[dim1] = slice(min(-offset, shape[dim1]), None)
    keep = [i for i in range(a.ndim) if i not in (dim1, dim2)]
    size = tuple(shape[i] for i in keep) + (length,)
    stride = tuple(strides[i] for i in keep) + (strides[dim1] + strides[dim2],)
    return xp_of(a).lib.stride_tricks.as_strided(a[tuple(start)], shape=size, strides=stride)


class UnbindBackward0(Op):
    """The slices of a dimension, each a view; backward stacks their gradients."""

    __slots__ = ("_dim",)
    op_name = "unbind"
    is_view = True
    # Outputs of a node that returns several views refuse in-place changes, as in PyTorch.
    multi_output_view = True

    def forward(self, a: Any, dim: int) -> tuple:
        self._dim = dim
        lead = (slice(None),) * dim
        return tuple(a[(*lead, i, Ellipsis)] for i in range(a.shape[dim]))

    def backward(self, *grads: Any) -> Any:
        if isinstance(grads[0], Tensor):
            return stack(list(grads), self._dim)
        return xp_of(grads[0]).stack(grads, axis=self._dim)


# ------------------------------------------------------------------- history
def regenerate_view(view: Tensor) -> None:
    """Hang `view` off its base's current history, as a strided view of the base (as PyTorch).

    Called after the base, or another view of it, was changed in place.
    """
    base = view._base
    strides = element_strides(view._data)
    offset = element_offset(view._data, base._data)
    regenerated = AsStridedBackward0.apply(
        base, size=view.shape, stride=strides, storage_offset=offset
    )
    rebase_history(view, regenerated.grad_fn)
    view._view_version = view._version_source._ver


# ------------------------------------------------------------------ functions
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """`length` elements of dimension `dim` from `start` (a view)."""
    axis = normalize_dim(dim, input.ndim)
    n = input.shape[axis]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    key = (slice(None),) * axis + (slice(start, start + length),)
    return SliceBackward0.apply(input, key=key)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """Index `index` of dimension `dim`, which is removed (a view)."""
    axis = normalize_dim(dim, input.ndim)
    n = input.shape[axis]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
            f"dimension {axis}"
        )
    key = (slice(None),) * axis + (index % n,)
    return SelectBackward0.apply(input, key=key)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """A view of `input` in `other`'s shape."""
    return view(input, other.shape)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices along `dim`, each without that dimension (views)."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    out = UnbindBackward0.apply(input, dim=normalize_dim(dim, input.ndim))
    return out if isinstance(out, tuple) else (out,)


def _storage_of(input: Tensor) -> tuple[Any, int]:
    """The C-contiguous storage `input` lives in, and `input`'s offset in it."""
    base = input._base
    storage = input._data if base is None else base._data
    require_contiguous_storage(storage, "a strided view")
    return storage, (0 if base is None else element_offset(input._data, storage))


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A view of `input`'s storage with the given sizes and strides (in elements)."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(size)} and {len(stride)}"
        )
    storage, own = _storage_of(input)
    offset = own if storage_offset is None else int(storage_offset)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True) if n > 0)
    if offset < own or (all(size) and last >= storage.size):
        raise RuntimeError(
            f"as_strided: size {list(size)}, stride {list(stride)} and storage offset {offset} "
            f"reach outside the {storage.size} elements of the tensor's storage"
        )
    if input._base is not None and not input._data.flags.c_contiguous:
        raise RuntimeError("as_strided of a non-contiguous view is not supported; clone() first")
    return AsStridedBackward0.apply(input, size=size, stride=stride, storage_offset=offset - own)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dimensions `dim1` and `dim2` as the last dimension (a view)."""
    d1, d2 = normalize_dim(dim1, input.ndim), normalize_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagonalBackward0.apply(input, offset=int(offset), dim1=d1, dim2=d2)


FUNCTIONS = {
    "narrow": narrow,
    "select": select,
    "unbind": unbind,
    "as_strided": as_strided,
    "diagonal": diagonal,
}
METHODS = {"view_as": view_as}


# A stale view is regenerated through its tensor (`history.refresh_if_stale`): the op it needs
# lives here, above the tensor.
Tensor._regenerate_view = regenerate_view  # type: ignore[method-assign,assignment]  # a hook
