"""Shape ops: reshape/view, transpose, permute, squeeze, unsqueeze, expand, flatten, clone,
contiguous, cat, stack, split, chunk.

Views (`is_view`) share storage and the version counter with their base, so an in-place change
through either is seen by the saved-tensor check. A reshape that NumPy could only do by copying is
recorded as a copy (`UnsafeViewBackward0`), never as a view.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..core.op import Op, torch_type_name
from ..core.tensor import Tensor
from ..devices import data_ptr
from ..layouts import (
    contiguous_format,
    is_laid_out_as,
    lay_out_as,
    preserve_format,
    require_memory_format,
)
from ..type_names import type_name
from .dual import concat, getitem, xp_of
from .promotion import result_type
from .reduction import normalize_dim


class ViewBackward0(Op):
    __slots__ = ("_shape",)
    op_name = "view"
    is_view = True

    def forward(self, a: Any, shape: tuple[int, ...]) -> Any:
        self._shape = a.shape
        return a.reshape(shape)

    def backward(self, g: Any) -> Any:
        return g.reshape(self._shape)


class UnsafeViewBackward0(ViewBackward0):
    """A reshape of a tensor whose strides forbid a view: the data is copied first."""

    __slots__ = ()
    op_name = "reshape"
    is_view = False

    def forward(self, a: Any, shape: tuple[int, ...]) -> Any:
        self._shape = a.shape
        return xp_of(a).ascontiguousarray(a).reshape(shape)


class TransposeBackward0(Op):
    __slots__ = ("_dims",)
    op_name = "transpose"
    is_view = True

    def forward(self, a: Any, dim0: int, dim1: int) -> Any:
        self._dims = (dim0, dim1)
        return a.swapaxes(dim0, dim1)

    def backward(self, g: Any) -> Any:
        return g.transpose(*self._dims) if isinstance(g, Tensor) else g.swapaxes(*self._dims)


class TBackward0(Op):
    """`t()`: a matrix transposed, or a 1-D or 0-d tensor as a view of itself."""

    __slots__ = ()
    op_name = "t"
    is_view = True

    def forward(self, a: Any) -> Any:
        return a.T

    def backward(self, g: Any) -> Any:
        return TBackward0.apply(g) if isinstance(g, Tensor) else g.T


class PermuteBackward0(Op):
    __slots__ = ("_inverse",)
    op_name = "permute"
    is_view = True

    def forward(self, a: Any, dims: tuple[int, ...]) -> Any:
        self._inverse = tuple(np.argsort(dims).tolist())
        return a.transpose(dims)

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return g.permute(*self._inverse)
        return g.transpose(self._inverse)


class SqueezeBackward0(ViewBackward0):
    __slots__ = ()
    op_name = "squeeze"


class SqueezeBackward1(ViewBackward0):
    __slots__ = ()
    op_name = "squeeze"


class SqueezeBackward2(ViewBackward0):
    __slots__ = ()
    op_name = "squeeze"


class UnsqueezeBackward0(ViewBackward0):
    __slots__ = ()
    op_name = "unsqueeze"


class ExpandBackward0(Op):
    __slots__ = ()
    op_name = "expand"
    is_view = True

    def forward(self, a: Any, shape: tuple[int, ...]) -> Any:
        xp = xp_of(a)
        # Writable where `a` is, as PyTorch's: in-place ops refuse to write to the elements that
        # share memory (`ops.inplace`), but a slice without repeats may be written through.
        strides = xp.broadcast_to(a, shape).strides
        return xp.lib.stride_tricks.as_strided(a, shape=shape, strides=strides)

    def backward(self, g: Any) -> Any:
        return g  # the engine sums a broadcast gradient back to the input's shape


class CloneBackward0(Op):
    __slots__ = ()
    op_name = "clone"

    def forward(self, a: Any) -> Any:
        return a.copy()

    def backward(self, g: Any) -> Any:
        return g


class CatBackward0(Op):
    __slots__ = ("_bounds", "_dim")
    op_name = "cat"

    def forward(self, *arrays: Any, dim: int) -> Any:
        dtype = result_type(*arrays)
        ends = np.cumsum([a.shape[dim] for a in arrays]).tolist()
        self._bounds = tuple(zip([0, *ends[:-1]], ends, strict=True))
        self._dim = dim
        promoted = [a if a.dtype == dtype else a.astype(dtype) for a in arrays]
        return xp_of(promoted[0]).concatenate(promoted, axis=dim)

    def backward(self, g: Any) -> tuple:
        lead = (slice(None),) * self._dim
        need = self.needs_input_grad
        return tuple(
            getitem(g, (*lead, slice(lo, hi))) if need[i] else None
            for i, (lo, hi) in enumerate(self._bounds)
        )


class StackBackward0(Op):
    __slots__ = ("_dim",)
    op_name = "stack"

    def forward(self, *arrays: Any, dim: int) -> Any:
        dtype = result_type(*arrays)
        self._dim = dim
        promoted = [a if a.dtype == dtype else a.astype(dtype) for a in arrays]
        return xp_of(promoted[0]).stack(promoted, axis=dim)

    def backward(self, g: Any) -> tuple:
        lead = (slice(None),) * self._dim
        need = self.needs_input_grad
        return tuple(getitem(g, (*lead, i)) if need[i] else None for i in range(len(need)))


class SplitBackward0(Op):
    """One node for all the pieces; backward concatenates their gradients (zeros where unused)."""

    __slots__ = ("_dim",)
    op_name = "split"
    is_view = True
    # Outputs of a node that returns several views refuse in-place changes, as in PyTorch.
    multi_output_view = True

    def forward(self, a: Any, bounds: tuple[tuple[int, int], ...], dim: int) -> tuple:
        self._dim = dim
        lead = (slice(None),) * dim
        return tuple(a[(*lead, slice(lo, hi))] for lo, hi in bounds)

    def backward(self, *grads: Any) -> Any:
        return concat(list(grads), self._dim)


class SplitWithSizesBackward0(SplitBackward0):
    __slots__ = ()


class UnsafeSplitBackward0(SplitBackward0):
    """The pieces share the input's memory, but autograd tracks them as separate tensors: an
    in-place change to one is allowed and is not seen by the input's history (PyTorch's
    unsafe_split, for code that knows the pieces are never changed in place)."""

    __slots__ = ()
    op_name = "unsafe_split"
    is_view = False
    multi_output_view = False


class UnsafeSplitWithSizesBackward0(UnsafeSplitBackward0):
    __slots__ = ()
    op_name = "unsafe_split_with_sizes"


# ---------------------------------------------------------------- functions
def _sizes(shape: Any) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(n) for n in shape)


def infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """`shape` with a -1 resolved, or PyTorch's error when it cannot hold `numel` elements."""
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(n < -1 for n in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[: unknown[0]] + (numel // known,) + shape[unknown[0] + 1 :]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _viewable(data: Any, shape: tuple[int, ...]) -> bool:
    if data.flags.c_contiguous:
        return True
    if not isinstance(data, np.ndarray):
        return False
    try:
        np.reshape(data, shape, copy=False)
    except ValueError:
        return False
    return True


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """The same elements in a new shape (a view when the strides allow, else a copy)."""
    shape = infer_shape(_sizes(shape), input.numel())
    if shape == input.shape:
        return ViewBackward0.apply(input, shape=shape)
    op = ViewBackward0 if _viewable(input._data, shape) else UnsafeViewBackward0
    return op.apply(input, shape=shape)


def view(input: Tensor, *shape: Any) -> Tensor:
    """A view in a new shape; an error when the strides do not allow one."""
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list)):
        return view_dtype(input, shape[0])
    shape = infer_shape(_sizes(shape), input.numel())
    if not _viewable(input._data, shape):
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return ViewBackward0.apply(input, shape=shape)


def stride(input: Tensor, dim: int | None = None) -> Any:
    """The steps, in elements, between neighbours along each dim (or along `dim`)."""
    data = input._data
    steps = tuple(s // data.itemsize for s in data.strides)
    return steps if dim is None else steps[normalize_dim(dim, input.ndim)]


def storage_offset(input: Tensor) -> int:
    """Where the tensor starts in its base's storage, in elements."""
    base = input._base
    if base is None:
        return 0
    return (data_ptr(input._data) - data_ptr(base._data)) // input._data.itemsize


def view_dtype(input: Tensor, dtype: Any) -> Tensor:
    """The same bytes read as `dtype` (a view, outside autograd as in PyTorch); with a different
    element size the last dim is scaled by the ratio of the sizes."""
    target = np.dtype(dtype)
    data = input._data
    old, new = data.dtype.itemsize, target.itemsize
    if old != new:
        what = (
            f"to view {torch_type_name(data.dtype)} as {torch_type_name(target)} (different "
            "element sizes)"
        )
        if data.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        stride = data.strides[-1] // old
        if stride != 1 and data.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride}")
        if new > old:
            ratio = new // old
            if data.shape[-1] % ratio:
                raise RuntimeError(
                    f"self.size(-1) must be divisible by {ratio} {what}, but got {data.shape[-1]}"
                )
            offset = storage_offset(input)
            if offset % ratio:
                raise RuntimeError(
                    f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}"
                )
    out = (
        data.view(target)
        if old == new or data.shape[-1] != 1 or data.flags.c_contiguous
        else (
            xp_of(data)
            .lib.stride_tricks.as_strided(data, strides=data.strides[:-1] + (old,))
            .view(target)
        )
    )
    base = input._base if input._base is not None else input
    return Tensor._wrap(out, input.device, None, 0, base)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions start_dim..end_dim into one."""
    if input.ndim == 0:
        return reshape(input, 1)
    start = normalize_dim(start_dim, input.ndim)
    end = normalize_dim(end_dim, input.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    return reshape(input, shape[:start] + (math.prod(shape[start : end + 1]),) + shape[end + 1 :])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    n = input.ndim
    return TransposeBackward0.apply(input, dim0=normalize_dim(dim0, n), dim1=normalize_dim(dim1, n))


def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dimensions."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return TBackward0.apply(input)


def permute(input: Tensor, *dims: Any) -> Tensor:
    """Reorder the dimensions (a view)."""
    dims = _sizes(dims)
    if len(dims) != input.ndim:
        raise RuntimeError(
            "permute(): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {input.ndim} is not "
            f"equal to len(dims) = {len(dims)}"
        )
    axes = tuple(normalize_dim(d, input.ndim) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return PermuteBackward0.apply(input, dims=axes)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Drop dimensions of length 1 (all, or those in `dim` that are 1)."""
    shape = input.shape
    op: type[Op]
    axes: Iterable[int]
    if dim is None:
        op, axes = SqueezeBackward0, range(input.ndim)
    elif isinstance(dim, int):
        op, axes = SqueezeBackward1, (normalize_dim(dim, input.ndim),)
    else:
        op, axes = SqueezeBackward2, tuple(normalize_dim(d, input.ndim) for d in dim)
    drop = {a for a in axes if input.ndim and shape[a] == 1}
    return op.apply(input, shape=tuple(n for i, n in enumerate(shape) if i not in drop))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dimension of length 1 at `dim`."""
    axis = normalize_dim(dim, input.ndim + 1)
    shape = input.shape
    return UnsqueezeBackward0.apply(input, shape=shape[:axis] + (1,) + shape[axis:])


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to `sizes` (-1 keeps a dimension) without copying."""
    sizes = _sizes(sizes)
    shape = input.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
            "provided must be greater or equal to the number of dimensions in the tensor"
        )
    lead = len(sizes) - len(shape)
    target = list(sizes)
    for i, n in enumerate(shape):
        want = sizes[lead + i]
        if want == -1:
            target[lead + i] = n
        elif n != want and n != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size ({n}) at "
                f"non-singleton dimension {lead + i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shape)}"
            )
    if any(n < 0 for n in target[:lead]):
        raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
    return ExpandBackward0.apply(input, shape=tuple(target))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """Broadcast to `other`'s shape."""
    return expand(input, other.shape)


def broadcast_to(input: Tensor, shape: Any) -> Tensor:
    """Broadcast to `shape`."""
    return expand(input, shape)


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy with its own storage, in the graph (row-major unless `memory_format` names a
    channels-last format)."""
    fmt = require_memory_format(memory_format, "clone")
    copied = CloneBackward0.apply(input)
    if fmt is not contiguous_format and fmt is not preserve_format:
        copied._data = lay_out_as(xp_of(copied._data), copied._data, fmt)
    return copied


def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    """The tensor itself when dense in `memory_format` (default row-major), else a copy that
    is."""
    fmt = require_memory_format(memory_format, "contiguous")
    if is_laid_out_as(input._data, fmt):
        return input
    if fmt is preserve_format:
        lay_out_as(None, input._data, fmt)  # PyTorch's refusal
    copied = CloneBackward0.apply(input)
    if fmt is not contiguous_format:
        # A fresh output nothing else holds: its values laid out again, its history kept.
        copied._data = lay_out_as(xp_of(copied._data), copied._data, fmt)
    return copied


def is_contiguous(input: Tensor, *, memory_format: Any = None) -> bool:
    """True when the tensor is dense in `memory_format` (default row-major)."""
    return is_laid_out_as(input._data, require_memory_format(memory_format, "is_contiguous"))


def _tensor_list(tensors: Any, name: str) -> list:
    if isinstance(tensors, Tensor):  # iterating it would quietly treat its rows as the list
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"
        )
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{name}(): expected a list of Tensors, got {type_name(x)} at position {i}"
            )
    return tensors


def cat(tensors: Any, dim: int = 0) -> Tensor:
    """Concatenate along an existing dimension."""
    tensors = _tensor_list(tensors, "cat")
    for i, x in enumerate(tensors):
        if x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    first = tensors[0]
    axis = normalize_dim(dim, first.ndim)
    for i, x in enumerate(tensors[1:], 1):
        if x.ndim != first.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.ndim} and {x.ndim}"
            )
        for d, (n, m) in enumerate(zip(first.shape, x.shape, strict=True)):
            if d != axis and n != m:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {axis}. Expected size {n} "
                    f"but got size {m} for tensor number {i} in the list."
                )
    return CatBackward0.apply(*tensors, dim=axis)


def stack(tensors: Any, dim: int = 0) -> Tensor:
    """Join along a new dimension."""
    tensors = _tensor_list(tensors, "stack")
    first = tensors[0]
    for i, x in enumerate(tensors[1:], 1):
        if x.shape != first.shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first.shape)} at "
                f"entry 0 and {list(x.shape)} at entry {i}"
            )
    axis = normalize_dim(dim, first.ndim + 1)
    return StackBackward0.apply(*tensors, dim=axis)


def _split(input: Tensor, bounds: list, axis: int, op: type[Op]) -> tuple:
    pieces = op.apply(input, bounds=tuple(bounds), dim=axis)  # views sharing input's version
    return pieces if isinstance(pieces, tuple) else (pieces,)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Pieces of `split_size_or_sections` along `dim` (an int size, or a list of sizes)."""
    return _split_pieces(
        tensor, split_size_or_sections, dim, (SplitBackward0, SplitWithSizesBackward0)
    )


def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """Pieces of the given sizes along `dim`, which must add up to its length."""
    return _split_pieces(input, list(split_sizes), dim, (SplitBackward0, SplitWithSizesBackward0))


def unsafe_split(input: Tensor, split_size: Any, dim: int = 0) -> tuple:
    """split whose pieces autograd does not track as views (see UnsafeSplitBackward0)."""
    return _split_pieces(
        input, split_size, dim, (UnsafeSplitBackward0, UnsafeSplitWithSizesBackward0)
    )


def unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """split_with_sizes whose pieces autograd does not track as views."""
    return _split_pieces(
        input, list(split_sizes), dim, (UnsafeSplitBackward0, UnsafeSplitWithSizesBackward0)
    )


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """chunk whose pieces autograd does not track as views."""
    return chunk(input, chunks, dim, _ops=(UnsafeSplitBackward0, UnsafeSplitWithSizesBackward0))


def _split_pieces(tensor: Tensor, split_size_or_sections: Any, dim: int, ops: tuple) -> tuple:
    axis = normalize_dim(dim, tensor.ndim)
    n = tensor.shape[axis]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(
                f"split expects split_size be non-negative, but got split_size={size}"
            )
        if size == 0 and n:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        starts = list(range(0, n, size)) if n else [0]
        bounds = [(lo, min(lo + size, n)) for lo in starts]
        return _split(tensor, bounds, axis, ops[0])
    sizes = [int(s) for s in split_size_or_sections]
    if any(s < 0 for s in sizes):  # a negative piece would make the others overlap
        raise RuntimeError(
            f"split_with_sizes expects split_sizes have only non-negative entries, but got "
            f"split_sizes={sizes}"
        )
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {axis}), but got split_sizes={sizes}"
        )
    ends = np.cumsum(sizes).tolist()
    bounds = list(zip([0, *ends[:-1]], ends, strict=True))
    return _split(tensor, bounds, axis, ops[1])


def chunk(input: Tensor, chunks: int, dim: int = 0, *, _ops: tuple | None = None) -> tuple:
    """At most `chunks` pieces of equal size (the last may be smaller) along `dim`."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = input.shape[normalize_dim(dim, input.ndim)]
    size = max(1, -(-n // chunks))
    if _ops is None:
        return split(input, size, dim)
    return _split_pieces(input, size, dim, _ops)


FUNCTIONS = {
    "reshape": reshape,
    "flatten": flatten,
    "transpose": transpose,
    "t": t,
    "permute": permute,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "clone": clone,
    "cat": cat,
    "concat": cat,
    "concatenate": cat,
    "stack": stack,
    "split": split,
    "split_with_sizes": split_with_sizes,
    "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
    "unsafe_chunk": unsafe_chunk,
    "chunk": chunk,
    "broadcast_to": broadcast_to,
}
METHODS = {
    "view": view,
    "stride": stride,
    "storage_offset": storage_offset,
    "expand": expand,
    "expand_as": expand_as,
    "contiguous": contiguous,
    "is_contiguous": is_contiguous,
}
