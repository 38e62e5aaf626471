"""A convolution's forward and backward on arrays: im2col, one matmul per group, col2im.

The columns are laid out (C * kernel, N * positions), so the whole batch is one 2-D matmul per
group, and so is the weight's gradient; NumPy's BLAS (or CuPy) spreads those matmuls over the
cores by itself. This is the whole-batch way: for CuPy, for small convolutions and with one
intra-op thread. A large NumPy convolution runs by parts of its batch instead (`conv_items`).
"""

from __future__ import annotations

import math
from typing import Any

from .dual import swap_last, xp_of
from .windows import (
    Windows,
    col2im_cf,
    from_cols_cf,
    im2col_cf,
    to_cols_cf,
)


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


def conv_forward(
    x: Any, w: Any, b: Any, win: Windows, groups: int, keep_columns: bool
) -> tuple[Any, Any]:
    """The convolution of `x` (N, C, *size) with `w` (+ `b`), and its columns if asked."""
    cols = grouped(im2col_cf(x, win), groups)
    rows = as_matrix(weight_matrix(w, groups) @ cols)
    return from_cols_cf(rows, win, x.shape[0], bias=b), (cols if keep_columns else None)


def conv_backward(
    g: Any,
    w: Any,
    cols: Any,
    win: Windows,
    groups: int,
    w_shape: tuple[int, ...],
    need: tuple[bool, ...],
) -> tuple[Any, Any, Any]:
    """Gradients of the input (from `w`), the weight (from the forward's columns) and the bias.

    `w` and `cols` may be None when the gradient that needs them is not wanted.
    """
    xp = xp_of(g)
    gx = gw = gb = None
    if need[0] or need[1]:
        g_rows = grouped(to_cols_cf(g, win), groups)
        if need[1]:
            # As columns @ rows.T, transposed back (a few KB): the same product, with the
            # output's larger side (C * kernel) leading. With two OpenBLAS threads, rows @
            # columns.T (its 32 output channels leading) took 1.7x as long for the benchmark's
            # shape, and up to 50x on a busy machine (0.85 s against 16 ms); one thread: equal.
            gw = xp.ascontiguousarray(swap_last(cols @ swap_last(g_rows))).reshape(w_shape)
        if need[0]:
            g_cols = as_matrix(swap_last(weight_matrix(w, groups)) @ g_rows)
            gx = col2im_cf(g_cols, win, g.shape[0])
    if len(need) > 2 and need[2]:
        gb = xp.einsum("ncl->c", g.reshape(g.shape[:2] + (-1,)))
    return gx, gw, gb
