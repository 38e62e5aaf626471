"""A large NumPy convolution run a few batch items at a time, on every intra-op thread.

The whole-batch way (`conv_arrays`) builds columns for the whole batch (nine times the input
for a 3x3 kernel) and runs one large matmul on them. Those columns do not fit in a core's
cache, so im2col, col2im and the copy out of the columns run at memory speed, and OpenBLAS's
threads gain little on a product with only as many rows as output channels. Here each part of a
few items builds its columns in a buffer of its thread's that stays in cache, runs its matmuls
on one BLAS thread (`backends.blas_threads`), and writes its slice of the result; the intra-op
threads (`intra_op`) share the parts. Backward builds each part's columns again from the padded
input, kept by forward instead of the columns (a ninth of their size), and adds each thread's
share of the weight's gradient at the end. `conv_layouts` says how a part's columns are laid
out: on the padded rows with unit strides, the exact windows otherwise. Transposed
convolutions run by parts the same way (at the end).

Only for NumPy arrays, large batches, more than one intra-op thread and a BLAS whose thread
count can be narrowed (`applies`); otherwise the whole-batch way runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backends.blas_threads import BLAS
from .conv_arrays import grouped, weight_matrix
from .conv_layouts import layout_of
from .dual import swap_last
from .intra_op import POOL
from .windows import Windows, positions_per_item

# Below this many column elements (C * kernel * N * positions) in all, a convolution runs the
# whole-batch way: its columns fit in cache anyway, and parts would only add calls.
ITEMS_MIN_COLUMNS = 1 << 21
# About this many column elements (2 MiB of float32) per part: a part's columns and gradient
# columns stay in cache (on the machine measured, a 2 MB copy ran at 38 GB/s and an 8 MB one at
# 12), and its matmuls are large enough for BLAS. The benchmark's convolution (3 items a part)
# took 18.6 ms against 19.9, 20.8 and 20.2 ms with parts of 2^18, 2^20 and 2^21 elements.
PART_COLUMNS = 1 << 19


def applies(x: Any, win: Windows, channels: int | None = None) -> bool:
    """Whether the convolution of `x` runs by parts of its batch. `channels` are those its
    columns gather (the input's; for a transposed convolution, its output's)."""
    channels = x.shape[1] if channels is None else channels
    return (
        type(x) is np.ndarray
        and x.shape[0] > 1
        and POOL.threads > 1
        and channels * win.kernel_numel * x.shape[0] * positions_per_item(win) >= ITEMS_MIN_COLUMNS
        and BLAS.available
    )


def _parts(n: int, columns_per_item: int) -> list[tuple[int, int]]:
    """A batch of `n` as (start, stop) parts of about `PART_COLUMNS` columns each, and at least
    two per thread, so that a thread that starts late still gets a share."""
    size = max(1, min(PART_COLUMNS // columns_per_item, math.ceil(n / (2 * POOL.threads))))
    return [(start, min(start + size, n)) for start in range(0, n, size)]


class _Buffers:
    """One thread's buffers, made at the size of its first part and remade for another size."""

    def __init__(self, dtype: Any) -> None:
        self._dtype = dtype
        self._made: dict[str, Any] = {}
        self.weight_grad: Any = None

    def get(self, name: str, shape: tuple[int, ...], zeroed: bool = False) -> Any:
        """The buffer `name` at `shape`; `zeroed` ones are zero when made (and then up to the
        caller: the gradient rows below rewrite only the positions that are not padding)."""
        buf = self._made.get(name)
        if buf is None or buf.shape != shape:
            make = np.zeros if zeroed else np.empty
            buf = self._made[name] = make(shape, dtype=self._dtype)
        return buf

    def add_to_weight_grad(self, a: Any, b: Any) -> None:
        """Add `a @ b` to this thread's share of the weight's gradient."""
        product = self.get("weight", a.shape[:-1] + b.shape[-1:])
        np.matmul(a, b, out=product)
        if self.weight_grad is None:
            self.weight_grad = product.copy()
        else:
            self.weight_grad += product


def _sum_shares(used: list[_Buffers]) -> Any:
    """The weight's gradient: the sum of each thread's share."""
    shares = [bufs.weight_grad for bufs in used if bufs.weight_grad is not None]
    total = shares[0]
    for share in shares[1:]:
        total += share
    return total


def _batch_axis(windows: Any, kernel_dims: int, start: int, stop: int) -> Any:
    """Items `start:stop` of a (C, *kernel, N, ...) windows view."""
    return windows[(slice(None),) * (1 + kernel_dims) + (slice(start, stop),)]


def forward(x: Any, w: Any, b: Any, win: Windows, groups: int) -> tuple[Any, Any]:
    """The convolution of `x` (N, C, *size) with `w` (+ `b`), and the padded input that
    backward reads (the layout's `keep`)."""
    n, o = x.shape[0], w.shape[0]
    layout = layout_of(win)
    kept = layout.keep(x)
    windows = layout.windows(kept)  # (C, *kernel, N, *positions)
    rows_of, nk = windows.shape[: 1 + len(win.kernel)], len(win.kernel)
    out = np.empty((n, o) + win.out, dtype=x.dtype)
    matrix = weight_matrix(w, groups)
    bias = None if b is None else b.reshape((1, o) + (1,) * len(win.out))

    def part(start: int, stop: int, bufs: _Buffers) -> None:
        m = stop - start
        part_windows = _batch_axis(windows, nk, start, stop)
        cols = bufs.get("cols", (math.prod(rows_of), m * layout.positions))
        np.copyto(cols.reshape(part_windows.shape), part_windows)
        rows = bufs.get("rows", matrix.shape[:-1] + (m * layout.positions,))
        np.matmul(matrix, grouped(cols, groups), out=rows)
        layout.out_into(rows.reshape((o, -1)), out[start:stop], bias)

    with BLAS.one_per_caller():
        POOL.run_parts(
            part, _parts(n, math.prod(rows_of) * layout.positions), lambda: _Buffers(x.dtype)
        )
    return out, kept


def backward(
    g: Any,
    w: Any,
    kept: Any,
    win: Windows,
    groups: int,
    w_shape: tuple[int, ...],
    need: tuple[bool, ...],
) -> tuple[Any, Any, Any]:
    """Gradients of the input (from `w`), the weight (from the padded input `kept`) and the
    bias. `w` and `kept` may be None when the gradient that needs them is not wanted."""
    n, o = g.shape[:2]
    c = w_shape[1] * groups
    ck = c * win.kernel_numel
    layout = layout_of(win)
    nk = len(win.kernel)
    gx = gw = gb = None
    if need[0]:
        gx = np.empty((n, c) + win.size, dtype=g.dtype)
        matrix_t = np.ascontiguousarray(swap_last(weight_matrix(w, groups)))
    if need[1]:
        windows = layout.windows(kept)

    def part(start: int, stop: int, bufs: _Buffers) -> None:
        m = stop - start
        rows = bufs.get("rows", (o, m * layout.positions), zeroed=layout.zeroed_rows)
        layout.rows_from(g[start:stop], rows)
        rows = grouped(rows, groups)
        if need[1]:
            part_windows = _batch_axis(windows, nk, start, stop)
            cols = bufs.get("cols", (ck, m * layout.positions))
            np.copyto(cols.reshape(part_windows.shape), part_windows)
            # As columns @ rows.T, like the whole-batch weight gradient (see `conv_arrays`).
            cols = grouped(cols, groups)
            bufs.add_to_weight_grad(cols, swap_last(rows))
        if need[0]:
            assert gx is not None  # made above when need[0]
            g_cols = bufs.get("g_cols", matrix_t.shape[:-1] + (m * layout.positions,))
            np.matmul(matrix_t, rows, out=g_cols)
            layout.image_into(
                g_cols.reshape((ck, -1)),
                gx[start:stop],
                bufs.get("image", layout.image_shape(c, m)),
            )

    if need[0] or need[1]:
        with BLAS.one_per_caller():
            _, used = POOL.run_parts(
                part, _parts(n, ck * layout.positions), lambda: _Buffers(g.dtype)
            )
        if need[1]:
            gw = np.ascontiguousarray(swap_last(_sum_shares(used))).reshape(w_shape)
    if len(need) > 2 and need[2]:
        gb = np.einsum("ncl->c", g.reshape(g.shape[:2] + (-1,)))
    return gx, gw, gb


# ----------------------------------------------------------- transposed convolutions
# A transposed convolution is a convolution's input gradient run forward: its columns are the
# weight's transpose times the input's rows, added back into the output image; its backward is
# a convolution of the output's gradient (the windows of that gradient, times the weight) and
# the weight's gradient, the input's rows times those windows.
def transposed_forward(x: Any, w: Any, b: Any, win: Windows, groups: int) -> Any:
    """The transposed convolution of `x` (N, C, *in) with `w` (C, O / G, *kernel) (+ `b`);
    `win` describes the windows over the output image."""
    n, c = x.shape[:2]
    o = w.shape[1] * groups
    layout = layout_of(win)
    out = np.empty((n, o) + win.size, dtype=x.dtype)
    matrix_t = np.ascontiguousarray(swap_last(weight_matrix(w, groups)))  # (.., O * K, C)
    bias = None if b is None else b.reshape((1, o) + (1,) * len(win.size))

    def part(start: int, stop: int, bufs: _Buffers) -> None:
        m = stop - start
        rows = bufs.get("rows", (c, m * layout.positions), zeroed=layout.zeroed_rows)
        layout.rows_from(x[start:stop], rows)
        cols = bufs.get("cols", matrix_t.shape[:-1] + (m * layout.positions,))
        np.matmul(matrix_t, grouped(rows, groups), out=cols)
        layout.image_into(
            cols.reshape((o * win.kernel_numel, -1)),
            out[start:stop],
            bufs.get("image", layout.image_shape(o, m)),
        )
        if bias is not None:
            out[start:stop] += bias

    with BLAS.one_per_caller():
        POOL.run_parts(
            part, _parts(n, o * win.kernel_numel * layout.positions), lambda: _Buffers(x.dtype)
        )
    return out


def transposed_backward(
    g: Any,
    w: Any,
    x: Any,
    win: Windows,
    groups: int,
    w_shape: tuple[int, ...],
    need: tuple[bool, ...],
) -> tuple[Any, Any]:
    """Gradients of a transposed convolution's input (from `w`) and weight (from `x`); `w` or
    `x` may be None when the gradient that needs it is not wanted."""
    n, o = g.shape[:2]
    c = w_shape[0]
    ok = o * win.kernel_numel
    layout = layout_of(win)
    windows, nk = layout.windows(layout.keep(g)), len(win.kernel)  # (O, *kernel, N, *pos)
    gx = gw = None
    if need[0]:
        gx = np.empty((n, c) + win.out, dtype=g.dtype)
        matrix = weight_matrix(w, groups)  # (.., C, O * K)

    def part(start: int, stop: int, bufs: _Buffers) -> None:
        m = stop - start
        part_windows = _batch_axis(windows, nk, start, stop)
        cols = bufs.get("cols", (ok, m * layout.positions))
        np.copyto(cols.reshape(part_windows.shape), part_windows)
        cols = grouped(cols, groups)
        if need[0]:
            assert gx is not None  # made above when need[0]
            rows = bufs.get("g_rows", matrix.shape[:-1] + (m * layout.positions,))
            np.matmul(matrix, cols, out=rows)
            layout.out_into(rows.reshape((c, -1)), gx[start:stop], None)
        if need[1]:
            rows = bufs.get("rows", (c, m * layout.positions), zeroed=layout.zeroed_rows)
            layout.rows_from(x[start:stop], rows)
            rows = grouped(rows, groups)
            bufs.add_to_weight_grad(rows, swap_last(cols))

    with BLAS.one_per_caller():
        _, used = POOL.run_parts(part, _parts(n, ok * layout.positions), lambda: _Buffers(g.dtype))
    if need[1]:
        gw = _sum_shares(used).reshape(w_shape)
    return gx, gw
