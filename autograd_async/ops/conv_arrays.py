"""A convolution's forward and backward on arrays: im2col, one matmul per group, col2im.

The columns are laid out (C * kernel, N * positions), so the whole batch is one 2-D matmul per
group, and so is the weight's gradient. NumPy's BLAS spreads those matmuls over the cores by
itself, but not im2col, col2im and the layout copies, a third of the op: with intra-op threads
set (`intra_op`, one by default) each of those runs as two halves of a large batch at once, one
on a helper thread. The matmuls stay whole on the caller: two threads each calling a
multithreaded OpenBLAS at once made a step several times slower (measured on two cores).
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


def conv_forward(
    x: Any, w: Any, b: Any, win: Windows, groups: int, keep_columns: bool
) -> tuple[Any, Any]:
    """The convolution of `x` (N, C, *size) with `w` (+ `b`), and its columns if asked."""
    xp = xp_of(x)
    n = x.shape[0]
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
    need: tuple[bool, ...],
) -> tuple[Any, Any, Any]:
    """Gradients of the input (from `w`), the weight (from the forward's columns) and the bias.

    `w` and `cols` may be None when the gradient that needs them is not wanted.
    """
    xp = xp_of(g)
    n = g.shape[0]
    per_item = positions_per_item(win)
    parts = batch_parts(g, win)
    gx = gw = gb = None
    if need[0] or need[1]:
        g_rows = xp.empty((g.shape[1], n, per_item), dtype=g.dtype)
        POOL.run(lambda start, stop: to_cols_cf(g[start:stop], win, g_rows[:, start:stop]),
                 parts)
        g_rows = grouped(g_rows.reshape((g_rows.shape[0], -1)), groups)
        if need[1]:
            # As columns @ rows.T, transposed back (a few KB): the same product, with the
            # output's larger side (C * kernel) leading. With two OpenBLAS threads, rows @
            # columns.T (its 32 output channels leading) took 1.7x as long for the benchmark's
            # shape, and up to 50x on a busy machine (0.85 s against 16 ms); one thread: equal.
            gw = xp.ascontiguousarray(swap_last(cols @ swap_last(g_rows))).reshape(w_shape)
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
