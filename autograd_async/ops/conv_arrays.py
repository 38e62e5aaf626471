"""A convolution's forward and backward on arrays: im2col, one matmul per group, col2im.

The columns are laid out (C * kernel, N * positions), so the whole batch is one 2-D matmul per
group, and so is the weight's gradient. NumPy's BLAS spreads those matmuls over the cores by
itself, but not im2col, col2im and the layout copies, a third of the op: with intra-op threads
set (`intra_op`, one by default) each of those runs as two halves of a large batch at once, one
on a helper thread. The matmuls stay whole on the caller: two threads each calling a
multithreaded OpenBLAS at once made a step several times slower (measured on two cores).

With one intra-op thread (the default), a large NumPy batch instead runs in tiles of a few items
whose columns fit in a core's L2 cache: im2col writes a tile's columns to cache and the matmul
reads them from there, rather than both streaming the whole batch's columns (9x the input)
through memory. The forward then keeps no columns; the weight's gradient rebuilds each tile's
from the saved input, which costs a copy into cache rather than holding them in memory.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dual import swap_last, xp_of
from .intra_op import POOL
from .windows import (
    Windows,
    col2im_cf,
    from_cols_cf,
    im2col_cf,
    positions_per_item,
    to_cols_cf,
)

# Below this many column elements (C * kernel * N * positions) a convolution runs whole on its
# caller: handing half to the helper thread costs tens of microseconds (hundreds when the other
# core is busy), as much as the copies of a small convolution save (the examples' CNN's second
# convolution, 0.7M elements, ran slower split).
SPLIT_MIN_COLUMNS = 1 << 21


# Bytes of columns per tile: a core's L2 (1 MiB on the machine measured). One 32x32 image of the
# benchmark (16 channels, 3x3) takes 0.6 MB of float32 columns; tiles of 1 to 4 items ran its
# forward 25-35% and its input gradient 20% faster than the whole batch at one BLAS thread.
TILE_COLUMN_BYTES = 1 << 20
# Batches with fewer column bytes than this run whole: their columns stay in cache anyway.
TILE_MIN_BYTES = 4 << 20


def weight_matrix(w: Any, groups: int) -> Any:
    """The weight (O, C / G, *kernel) as (O, C / G * K), or (G, O / G, C / G * K) with groups."""
    if groups == 1:
        return w.reshape((w.shape[0], -1))
    return w.reshape((groups, w.shape[0] // groups, -1))


def grouped(rows: Any, groups: int) -> Any:
    """(R, M) as itself, or (G, R / G, M) with groups."""
    if groups == 1:
        return rows
    return rows.reshape((groups, rows.shape[0] // groups, rows.shape[1]))


def as_matrix(a: Any) -> Any:
    """(G, R, M) per-group rows stacked as (G * R, M); a matrix as itself."""
    return a.reshape((math.prod(a.shape[:-1]), a.shape[-1]))


def batch_parts(x: Any, win: Windows) -> list[tuple[int, int]]:
    """How to split the batch of `x` for its copies: in two halves when large enough."""
    columns = x.shape[1] * win.kernel_numel * x.shape[0] * win.out_numel
    if type(x) is not np.ndarray or columns < SPLIT_MIN_COLUMNS:  # CuPy has its own streams
        return [(0, x.shape[0])]
    return POOL.split(x.shape[0])


def batch_tiles(
    n: int, channels: int, dtype: Any, win: Windows, array: Any
) -> list[tuple[int, int]] | None:
    """(start, stop) tiles of a batch of `n` for the cache-sized path, or None to run it whole.

    `channels` is the input's; `array` (any of the op's arrays) tells NumPy from CuPy.
    """
    if type(array) is not np.ndarray or POOL.threads > 1:
        return None
    per_item = channels * win.kernel_numel * positions_per_item(win) * np.dtype(dtype).itemsize
    if per_item * n < TILE_MIN_BYTES:
        return None
    size = max(1, TILE_COLUMN_BYTES // per_item)
    return [(start, min(n, start + size)) for start in range(0, n, size)]


def _tile_buffer(rows: int, tiles: list[tuple[int, int]], per_item: int, dtype: Any) -> Any:
    """A flat buffer large enough for (rows, largest tile, per_item)."""
    largest = max(stop - start for start, stop in tiles)
    return np.empty(rows * largest * per_item, dtype=dtype)


def _tile_view(buffer: Any, rows: int, items: int, per_item: int) -> Any:
    """A contiguous (rows, items, per_item) view at the start of `buffer`."""
    return buffer[: rows * items * per_item].reshape((rows, items, per_item))


def _grouped_matmul(a: Any, b: Any, groups: int) -> Any:
    """(G * R, M) rows of `a` @ columns of `b` (2-D), per group; a plain matmul without groups."""
    return as_matrix(a @ grouped(b, groups))


def conv_forward_tiled(
    x: Any, w: Any, b: Any, win: Windows, groups: int, tiles: list[tuple[int, int]]
) -> Any:
    """The convolution of NumPy `x` tile by tile (see the module's docstring); no columns kept."""
    per_item = positions_per_item(win)
    rows = x.shape[1] * win.kernel_numel
    out = np.empty((x.shape[0], w.shape[0]) + win.out, dtype=x.dtype)
    buffer = _tile_buffer(rows, tiles, per_item, x.dtype)
    wm = weight_matrix(w, groups)
    for start, stop in tiles:
        cols = im2col_cf(x[start:stop], win, _tile_view(buffer, rows, stop - start, per_item))
        result = _grouped_matmul(wm, cols.reshape((rows, -1)), groups)
        from_cols_cf(result, win, stop - start, out[start:stop], b)
    return out


def conv_backward_tiled(
    g: Any, x: Any, w: Any, win: Windows, groups: int, w_shape: tuple[int, ...],
    need: tuple[bool, ...], tiles: list[tuple[int, int]],
) -> tuple[Any, Any]:
    """Gradients of the input and the weight, tile by tile, each tile's columns from `x`."""
    per_item = positions_per_item(win)
    out_rows = g.shape[1]
    in_rows = w_shape[1] * groups * win.kernel_numel
    g_buffer = _tile_buffer(out_rows, tiles, per_item, g.dtype)
    cols_buffer = _tile_buffer(in_rows, tiles, per_item, g.dtype) if need[1] else None
    wm_t = swap_last(weight_matrix(w, groups)) if need[0] else None
    gx = np.empty((g.shape[0], in_rows // win.kernel_numel) + win.size, dtype=g.dtype) \
        if need[0] else None
    gw = None
    for start, stop in tiles:
        items = stop - start
        g_rows = to_cols_cf(g[start:stop], win, _tile_view(g_buffer, out_rows, items, per_item))
        g_rows = grouped(g_rows.reshape((out_rows, -1)), groups)
        if need[1]:
            cols = im2col_cf(x[start:stop], win, _tile_view(cols_buffer, in_rows, items, per_item))
            part = g_rows @ swap_last(grouped(cols.reshape((in_rows, -1)), groups))
            if gw is None:
                gw = part
            else:
                gw += part
        if need[0]:
            g_cols = as_matrix(wm_t @ g_rows)
            col2im_cf(g_cols, win, items, gx[start:stop])
    return gx, (gw.reshape(w_shape) if gw is not None else None)


def conv_forward(
    x: Any, w: Any, b: Any, win: Windows, groups: int, keep_columns: bool
) -> tuple[Any, Any]:
    """The convolution of `x` (N, C, *size) with `w` (+ `b`), and its columns if asked."""
    xp = xp_of(x)
    n = x.shape[0]
    tiles = batch_tiles(n, x.shape[1], x.dtype, win, x)
    if tiles is not None:
        return conv_forward_tiled(x, w, b, win, groups, tiles), None
    per_item = positions_per_item(win)
    parts = batch_parts(x, win)
    cols = xp.empty((x.shape[1] * win.kernel_numel, n, per_item), dtype=x.dtype)
    POOL.run(lambda start, stop: im2col_cf(x[start:stop], win, cols[:, start:stop]), parts)
    cols = grouped(cols.reshape((cols.shape[0], -1)), groups)
    rows = as_matrix(weight_matrix(w, groups) @ cols).reshape((w.shape[0], n, per_item))
    out = xp.empty((n, w.shape[0]) + win.out, dtype=x.dtype)
    POOL.run(
        lambda start, stop: from_cols_cf(
            rows[:, start:stop], win, stop - start, out[start:stop], b
        ),
        parts,
    )
    return out, (cols if keep_columns else None)


def conv_backward(
    g: Any, w: Any, cols: Any, win: Windows, groups: int, w_shape: tuple[int, ...],
    need: tuple[bool, ...], x: Any = None,
) -> tuple[Any, Any, Any]:
    """Gradients of the input (from `w`), the weight (from the forward's columns) and the bias.

    `w` and `cols` may be None when the gradient that needs them is not wanted; without `cols`
    (a tiled forward keeps none) the weight's gradient rebuilds them from the input `x`.
    """
    xp = xp_of(g)
    n = g.shape[0]
    per_item = positions_per_item(win)
    parts = batch_parts(g, win)
    gx = gw = gb = None
    tiles = batch_tiles(n, w_shape[1] * groups, g.dtype, win, g)
    if tiles is not None and (need[0] or need[1]):
        gx, gw = conv_backward_tiled(g, x, w, win, groups, w_shape, need, tiles)
    elif need[0] or need[1]:
        if need[1] and cols is None:
            cols = grouped(im2col_cf(x, win), groups)
        g_rows = xp.empty((g.shape[1], n, per_item), dtype=g.dtype)
        POOL.run(lambda start, stop: to_cols_cf(g[start:stop], win, g_rows[:, start:stop]),
                 parts)
        g_rows = grouped(g_rows.reshape((g_rows.shape[0], -1)), groups)
        if need[1]:
            gw = (g_rows @ swap_last(cols)).reshape(w_shape)
        if need[0]:
            g_cols = as_matrix(swap_last(weight_matrix(w, groups)) @ g_rows)
            g_cols = g_cols.reshape((g_cols.shape[0], n, per_item))
            gx = xp.empty((n, w_shape[1] * groups) + win.size, dtype=g.dtype)
            POOL.run(
                lambda start, stop: col2im_cf(
                    g_cols[:, start:stop], win, stop - start, gx[start:stop]
                ),
                parts,
            )
    if len(need) > 2 and need[2]:
        gb = xp.einsum("ncl->c", g.reshape(g.shape[:2] + (-1,)))
    return gx, gw, gb
