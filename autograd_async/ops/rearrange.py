"""Rearranging ops: repeat, repeat_interleave, flip, roll (copies) and movedim, unflatten,
reshape_as, swapdims (views, built on the view ops of `ops.shape`).

Copies never share storage with their input (NumPy's `flip` is a view, so it is copied), while the
views go through `reshape`/`permute`/`transpose` and so share the base's version counter.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import reshape as reshape_any
from .dual import sum_dims, xp_of
from .gather import index_select
from .reduction import normalize_dim
from .shape import _sizes, infer_shape, permute, reshape, transpose, unsqueeze


class RepeatBackward0(Op):
    __slots__ = ("_repeats", "_shape")
    op_name = "repeat"

    def forward(self, a: Any, repeats: tuple[int, ...]) -> Any:
        lead = len(repeats) - a.ndim
        self._shape = (1,) * lead + a.shape
        self._repeats = repeats
        return xp_of(a).tile(a, repeats)

    def backward(self, g: Any) -> Any:
        # The output is laid out as (r0, s0, r1, s1, ...): sum the r axes away.
        interleaved = tuple(n for pair in zip(self._repeats, self._shape) for n in pair)
        total = sum_dims(reshape_any(g, interleaved), tuple(range(0, len(interleaved), 2)))
        lead = len(self._repeats) - len(self._shape)
        return reshape_any(total, self._shape[lead:]) if lead else total


class FlipBackward0(Op):
    __slots__ = ("_dims",)
    op_name = "flip"

    def forward(self, a: Any, dims: tuple[int, ...]) -> Any:
        self._dims = dims
        return xp_of(a).flip(a, axis=dims).copy()

    def backward(self, g: Any) -> Any:
        if isinstance(g, Tensor):
            return FlipBackward0.apply(g, dims=self._dims)
        return xp_of(g).flip(g, axis=self._dims)


class RollBackward0(Op):
    __slots__ = ("_shifts", "_dims")
    op_name = "roll"

    def forward(self, a: Any, shifts: Any, dims: Any) -> Any:
        self._shifts, self._dims = shifts, dims
        return xp_of(a).roll(a, shifts, axis=dims)

    def backward(self, g: Any) -> Any:
        back = tuple(-s for s in self._shifts) if isinstance(self._shifts, tuple) else -self._shifts
        if isinstance(g, Tensor):
            return RollBackward0.apply(g, shifts=back, dims=self._dims)
        return xp_of(g).roll(g, back, axis=self._dims)


# ---------------------------------------------------------------- functions
def _int_tuple(value: Any) -> tuple[int, ...]:
    return (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)


def repeat(input: Tensor, *repeats: Any) -> Tensor:
    """Tile the tensor `repeats[i]` times along each dimension (extra leading repeats add dims)."""
    repeats = _sizes(repeats)
    if len(repeats) < input.ndim:
        raise RuntimeError(
            "repeat: Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    if any(r < 0 for r in repeats):
        raise RuntimeError(
            f"repeat: Trying to create tensor with negative dimension: {list(repeats)}"
        )
    return RepeatBackward0.apply(input, repeats=repeats)


def repeat_interleave(
    input: Tensor, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    """Repeat each element (or slice along `dim`) `repeats` times; `repeats` may be a tensor."""
    if repeats is None:  # repeat_interleave(counts): indices 0..n-1, each counts[i] times
        counts = input
        xp = xp_of(counts._data)
        # CuPy's repeat takes the counts as a list, not as an array.
        index = xp.repeat(xp.arange(counts.shape[0]), counts._data.tolist())
        return Tensor._wrap(index, counts.device)
    if dim is None:
        input, dim = reshape(input, -1), 0
    axis = normalize_dim(dim, input.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        repeats = int(repeats.item())
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeat_interleave: Repeats must be non-negative")
        shape = input.shape
        wide = unsqueeze(input, axis + 1).expand(*shape[: axis + 1], repeats, *shape[axis + 1 :])
        # Copied once (as PyTorch does), so the reshape that follows is a view of the copy.
        wide = wide.contiguous()
        return reshape(wide, *shape[:axis], shape[axis] * repeats, *shape[axis + 1 :])
    counts = repeats._data if isinstance(repeats, Tensor) else xp_of(input._data).asarray(repeats)
    if counts.ndim != 1 or counts.shape[0] != input.shape[axis]:
        raise RuntimeError(
            f"repeat_interleave: repeats must have the same size as input along dim {axis}, got "
            f"{tuple(counts.shape)} repeats for size {input.shape[axis]}"
        )
    if counts.dtype.kind not in "iu":
        raise RuntimeError(f"repeat_interleave: repeats must be integers, got {counts.dtype}")
    if counts.size and int(counts.min()) < 0:
        raise RuntimeError("repeat_interleave: Repeats must be non-negative")
    xp = xp_of(input._data)
    index = xp.repeat(xp.arange(counts.shape[0]), counts.tolist())

    return index_select(input, axis, Tensor._wrap(index, input.device))


def flip(input: Tensor, *args: Any, dims: Any = None) -> Tensor:
    """The tensor with the order of elements reversed along `dims` (a copy).

    The dims come as PyTorch takes them: `flip(x, [0, 1])`, `x.flip(0, 1)` or `dims=[0, 1]`.
    """
    if dims is not None and args:
        raise TypeError("flip(): got dims both positionally and as a keyword")
    axes = tuple(normalize_dim(d, input.ndim) for d in _sizes(args if dims is None else (dims,)))
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"flip: dims has duplicates, original flip dims size={len(axes)}")
    return FlipBackward0.apply(input, dims=axes)


def fliplr(input: Tensor) -> Tensor:
    """Flip the columns (dim 1) of a tensor of at least 2 dims."""
    if input.ndim < 2:
        raise RuntimeError("fliplr: Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    """Flip the rows (dim 0) of a tensor of at least 1 dim."""
    if input.ndim < 1:
        raise RuntimeError("flipud: Input must be >= 1-d.")
    return flip(input, 0)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically by `shifts` along `dims` (over the flattened tensor without)."""
    shifts = _int_tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(
                f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:0"
            )
        return RollBackward0.apply(input, shifts=shifts[0], dims=None)
    dims = _int_tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    axes = tuple(normalize_dim(d, input.ndim) for d in dims)
    return RollBackward0.apply(input, shifts=shifts, dims=axes)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dimensions `source` to positions `destination`, keeping the others' order (a view)."""
    src, dst = _int_tuple(source), _int_tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    n = input.ndim
    src = tuple(normalize_dim(d, n) for d in src)
    dst = tuple(normalize_dim(d, n) for d in dst)
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(dims)})")
    order: list[int | None] = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    perm = tuple(o if o is not None else next(rest) for o in order)
    return permute(input, perm)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view); PyTorch's alias of `transpose`."""
    return transpose(input, dim0, dim1)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Swap two dimensions (a view); PyTorch's alias of `transpose`, with NumPy's argument names."""
    return transpose(input, axis0, axis1)


def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:
    """Split dimension `dim` into `sizes` (one may be -1), as a view."""
    axis = normalize_dim(dim, input.ndim)
    sizes = _int_tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    length = input.shape[axis]
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    if -1 not in sizes and math.prod(sizes) != length:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({length}) in the input tensor"
        )
    sizes = infer_shape(sizes, length)
    return reshape(input, *input.shape[:axis], *sizes, *input.shape[axis + 1 :])


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """`input` in `other`'s shape (a view when the strides allow)."""
    return reshape(input, other.shape)


FUNCTIONS = {
    "repeat_interleave": repeat_interleave,
    "flip": flip,
    "fliplr": fliplr,
    "flipud": flipud,
    "roll": roll,
    "movedim": movedim,
    "moveaxis": movedim,
    "swapdims": swapdims,
    "swapaxes": swapaxes,
    "unflatten": unflatten,
}
METHODS = {"repeat": repeat, "reshape_as": reshape_as}
