"""Max pooling as one node: the windows stacked once, the winners found by contiguous passes.

The forward copies the windows of (N, C, *size) into one (kernel, N * C * out) array, so that
each kernel offset is a contiguous row: finding every window's winner is then a few passes over
long contiguous rows instead of strided views whose innermost runs are as short as the output's
width (four elements for an 8x8 image pooled 2x2), where NumPy's per-run overhead dominates.
The node keeps only the winning offset of each window (one byte for kernels up to 256
elements); its backward writes the gradient into the winners' rows and puts the rows back in
place with one copy (windows that tile the input) or one strided add per kernel offset.
With `create_graph=True` the backward is a scatter node at PyTorch's indices instead, so max
pooling has derivatives of every order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.op import Op
from ..core.tensor import Tensor
from .dual import xp_of
from .plane_gather import ScatterAddBackward0
from .windows import Windows, _add_blocks, window_view


def lowest(dtype: Any) -> float | int:
    """The value that never wins a max: -inf, or the smallest integer."""
    return -math.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


def _tiles(win: Windows) -> bool:
    """Whether the windows cover the input exactly once each (no padding, gaps or overlap)."""
    return (
        not any(win.pad_lo)
        and not any(win.pad_hi)
        and all(d == 1 for d in win.dilation)
        and win.stride == win.kernel
        and all(o * k == n for o, k, n in zip(win.out, win.kernel, win.size))
    )


def _tiled_view(image: Any, win: Windows) -> Any:
    """A view (N, C, *kernel, *out) of an image that the windows tile (see `_tiles`)."""
    dims = len(win.kernel)
    split = image.reshape(
        image.shape[:2] + tuple(x for pair in zip(win.out, win.kernel) for x in pair)
    )
    order = (0, 1) + tuple(3 + 2 * i for i in range(dims)) + tuple(2 + 2 * i for i in range(dims))
    return split.transpose(order)


def stacked_windows(x: Any, win: Windows) -> Any:
    """The windows of `x` (N, C, *size) as one contiguous (kernel, N * C * out) array.

    Padding holds the lowest value of the dtype, so it never beats an input element.
    """
    xp = xp_of(x)
    view = _tiled_view(x, win) if _tiles(win) else window_view(x, win, lowest(x.dtype))
    dims = len(win.kernel)
    moved = xp.moveaxis(view, tuple(range(2, 2 + dims)), tuple(range(dims)))
    return xp.ascontiguousarray(moved).reshape((win.kernel_numel, -1))


def window_winners(stacked: Any) -> tuple[Any, Any]:
    """Each window's winning kernel offset and its value, from (kernel, windows) rows.

    An offset wins when its value is greater than the best so far, or NaN, so the first of
    equal values wins and the last NaN of a window wins, as in PyTorch's kernel. Every pass is
    an unmasked ufunc (masked copies are several times slower in NumPy): the offsets come in
    increasing order, so a later winner is simply the larger index.
    """
    xp = xp_of(stacked)
    count = stacked.shape[0]
    best = stacked[0].copy()
    index_type = np.min_scalar_type(count - 1)
    winner = xp.zeros(best.shape, dtype=index_type)
    floating = best.dtype.kind == "f"
    better = xp.empty(best.shape, dtype=bool)
    marked = xp.empty(best.shape, dtype=index_type)
    for i in range(1, count):
        value = stacked[i]
        xp.greater(value, best, out=better)
        if floating:
            better |= xp.isnan(value)
        xp.multiply(better, index_type.type(i), out=marked)
        xp.maximum(winner, marked, out=winner)
        # NaN propagates; on equal values `maximum` returns its second operand, the earlier one.
        xp.maximum(value, best, out=best)
    return winner, best


def _skip_padding(winner: Any, win: Windows) -> Any:
    """Winners (N, C, out) moved off the padding to the window's first input element.

    Padding holds the lowest value, so it wins only where every input element of the window is
    that value too (-inf, say); PyTorch's kernel, which never reads padding, then picks the first
    of them.
    """
    xp = xp_of(winner)
    inside = np.ones((win.kernel_numel, win.out_numel), dtype=bool)
    for axis, (k, d, s, lo, o, n) in enumerate(
        zip(win.kernel, win.dilation, win.stride, win.pad_lo, win.out, win.size)
    ):
        coord = np.add.outer(np.arange(k) * d, np.arange(o) * s) - lo  # (k, o)
        shape_k = [1] * len(win.kernel)
        shape_o = [1] * len(win.out)
        shape_k[axis], shape_o[axis] = k, o
        ok = ((coord >= 0) & (coord < n)).reshape(tuple(shape_k) + tuple(shape_o))
        inside &= np.broadcast_to(ok, win.kernel + win.out).reshape(inside.shape)
    first = xp.asarray(inside.argmax(axis=0))
    inside = xp.asarray(inside)
    chosen = inside[winner, xp.arange(win.out_numel)]
    return xp.where(chosen, winner, first)


def plane_indices(winner: Any, win: Windows) -> Any:
    """PyTorch's indices: each winner (N, C, out) as a flat int64 index within its plane."""
    xp = xp_of(winner)
    at_kernel = xp.unravel_index(winner, win.kernel)
    at_window = xp.unravel_index(xp.arange(win.out_numel), win.out)
    flat = None
    for o, k, s, d, lo, n in zip(
        at_window, at_kernel, win.stride, win.dilation, win.pad_lo, win.size
    ):
        coord = o * s + k * d - lo
        flat = coord if flat is None else flat * n + coord
    assert flat is not None  # windows have at least one spatial dimension
    return flat.astype(np.int64, copy=False)


class MaxPoolWithIndicesBackward0(Op):
    """The maximum of each window of (N, C, *size), and optionally where it was (PyTorch's)."""

    __slots__ = ("_win", "_winner", "_x_shape")
    saved_slots = ("_winner",)
    op_name = "max_pool"
    non_differentiable_outputs = (1,)

    def forward(self, x: Any, *, win: Windows, return_indices: bool) -> Any:
        self._win, self._x_shape = win, x.shape
        n, c = x.shape[:2]
        winner, best = window_winners(stacked_windows(x, win))
        winner = winner.reshape((n, c, win.out_numel))
        if any(win.pad_lo) or any(win.pad_hi):
            # Only where every element of a window is the lowest value: `best` is that value still.
            winner = _skip_padding(winner, win)
        self._winner = winner if self.needs_input_grad[0] else None
        out = best.reshape((n, c) + win.out)
        if not return_indices:
            return out
        return out, plane_indices(winner, win).reshape((n, c) + win.out)

    def backward(self, g: Any, _g_indices: Any = None) -> tuple:
        self.check_released()
        win, winner = self._win, self._winner
        assert winner is not None  # kept whenever the input needs a gradient
        n, c = self._x_shape[:2]
        if isinstance(g, Tensor):  # create_graph: a scatter node, whose gradient is a gather
            index = plane_indices(winner, win).reshape((n * c, win.out_numel))
            size = math.prod(win.size)
            rows = g.reshape((n * c, win.out_numel))
            return (ScatterAddBackward0.apply(rows, index, size=size).reshape(self._x_shape),)
        xp = xp_of(g)
        flat = g.reshape(-1)
        winner = winner.reshape(-1)
        count = flat.shape[0]
        rows = xp.zeros((win.kernel_numel, count), dtype=g.dtype)
        # Each window's gradient into its winner's row: one flat put (masked copies per row
        # are several times slower).
        at = winner.astype(np.intp) * count
        at += xp.arange(count)
        rows.reshape(-1)[at] = flat
        dims = len(win.kernel)
        blocks = xp.moveaxis(
            rows.reshape(win.kernel + (n, c) + win.out),
            tuple(range(dims)),
            tuple(range(2, 2 + dims)),
        )  # (N, C, *kernel, *out)
        if not _tiles(win):
            return (_add_blocks(blocks, win),)
        grad = xp.empty(self._x_shape, dtype=g.dtype)
        _tiled_view(grad, win)[...] = blocks
        return (grad,)


def max_pool(x: Tensor, win: Windows, return_indices: bool) -> Any:
    """Max pooling of (N, C, *size) over `win`: the output, and the indices when asked."""
    return MaxPoolWithIndicesBackward0.apply(x, win=win, return_indices=return_indices)
