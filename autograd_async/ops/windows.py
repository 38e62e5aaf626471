"""Sliding windows over the spatial dims of (N, C, *spatial) arrays: im2col and col2im.

Convolutions, pooling, `unfold` and `fold` all read an input through windows: `im2col` gathers
every window into columns through one strided view (no loop over pixels or batch items), and
`col2im`, its adjoint, adds columns back into an image with one strided add per kernel offset.
Both use the array's own module (NumPy or CuPy).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from .dual import xp_of


@dataclass(frozen=True, slots=True)
class Windows:
    """The geometry of windows over the spatial dims: one entry per spatial dim in each field.

    `size` is the spatial size of the image, `out` the number of windows along each dim; the
    image is padded by `pad_lo` before and `pad_hi` after (`pad_hi` may exceed the padding the
    caller asked for, so that ceil-mode windows that run past the end still fit).
    """

    size: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pad_lo: tuple[int, ...]
    pad_hi: tuple[int, ...]
    out: tuple[int, ...]

    @property
    def kernel_numel(self) -> int:
        """Elements of one window."""
        return math.prod(self.kernel)

    @property
    def out_numel(self) -> int:
        """Number of windows."""
        return math.prod(self.out)

    @property
    def padded(self) -> tuple[int, ...]:
        """The spatial size of the padded image."""
        return tuple(n + lo + hi for n, lo, hi in zip(self.size, self.pad_lo, self.pad_hi))


def conv_windows(
    size: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    pad_lo: tuple[int, ...],
    pad_hi: tuple[int, ...],
    ceil_mode: bool = False,
) -> Windows:
    """The windows a convolution (or pooling, with `ceil_mode`) takes over an image of `size`.

    In ceil mode a last partial window counts when it starts inside the image or its left
    padding (PyTorch's rule); the right padding then grows so that it fits.
    """
    out = []
    hi_needed = []
    for n, k, s, d, lo, hi in zip(size, kernel, stride, dilation, pad_lo, pad_hi):
        span = n + lo + hi - d * (k - 1) - 1
        count = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (count - 1) * s >= n + lo:
            count -= 1
        out.append(max(count, 0))
        hi_needed.append(max(hi, (count - 1) * s + d * (k - 1) + 1 - n - lo))
    return Windows(
        tuple(size),
        tuple(kernel),
        tuple(stride),
        tuple(dilation),
        tuple(pad_lo),
        tuple(hi_needed),
        tuple(out),
    )


def pad_spatial(x: Any, win: Windows, value: float = 0.0) -> Any:
    """`x` (N, C, *spatial) padded by the windows' padding with `value` (itself when none)."""
    if not any(win.pad_lo) and not any(win.pad_hi):
        return x
    xp = xp_of(x)
    out = xp.full(x.shape[:2] + win.padded, value, dtype=x.dtype)
    inner = tuple(slice(lo, lo + n) for lo, n in zip(win.pad_lo, win.size))
    out[(slice(None), slice(None), *inner)] = x
    return out


def window_view(x: Any, win: Windows, value: float = 0.0) -> Any:
    """A read-only strided view (N, C, *kernel, *out) of the windows of `x` (padded first)."""
    return padded_windows(pad_spatial(x, win, value), win)


def padded_windows(padded: Any, win: Windows) -> Any:
    """The windows (N, C, *kernel, *out) of an image already padded, as a strided view."""
    xp = xp_of(padded)
    lead = padded.strides[:2]
    spatial = padded.strides[2:]
    strides = (
        lead
        + tuple(st * d for st, d in zip(spatial, win.dilation))
        + tuple(st * s for st, s in zip(spatial, win.stride))
    )
    shape = padded.shape[:2] + win.kernel + win.out
    return xp.lib.stride_tricks.as_strided(padded, shape=shape, strides=strides)


def im2col(x: Any, win: Windows, value: float = 0.0) -> Any:
    """The windows of `x` (N, C, *spatial) as columns: a new array (N, C * kernel, out)."""
    n, c = x.shape[:2]
    cols = window_view(x, win, value)
    # One copy out of the strided view; reshape of a view that is not contiguous copies.
    return cols.reshape((n, c * win.kernel_numel, win.out_numel))


def col2im(cols: Any, win: Windows) -> Any:
    """The adjoint of `im2col`: columns (N, C * kernel, out) added back into (N, C, *size)."""
    n = cols.shape[0]
    c = cols.shape[1] // win.kernel_numel
    return _add_blocks(cols.reshape((n, c) + win.kernel + win.out), win)


def _add_blocks(blocks: Any, win: Windows) -> Any:
    """Window blocks (N, C, *kernel, *out) (any strides) added into an image (N, C, *size).

    One strided add per kernel offset; overlapping windows accumulate.
    """
    xp = xp_of(blocks)
    image = xp.zeros(blocks.shape[:2] + win.padded, dtype=blocks.dtype)
    offsets = itertools.product(*(range(k) for k in win.kernel))
    for offset, target in zip(offsets, block_targets(win)):
        image[(slice(None), slice(None), *target)] += blocks[(slice(None), slice(None), *offset)]
    if not any(win.pad_lo) and not any(win.pad_hi):
        return image
    inner = tuple(slice(lo, lo + size) for lo, size in zip(win.pad_lo, win.size))
    # A compact copy: a gradient that is a view would keep the whole padded image alive.
    return xp.ascontiguousarray(image[(slice(None), slice(None), *inner)])


def block_targets(win: Windows) -> list[tuple[slice, ...]]:
    """Per kernel offset, in im2col's order: the padded image's elements its windows read."""
    return [
        tuple(
            slice(k * d, k * d + s * (o - 1) + 1, s)
            for k, d, s, o in zip(offset, win.dilation, win.stride, win.out)
        )
        for offset in itertools.product(*(range(k) for k in win.kernel))
    ]


# ------------------------------------------------------- stride-1 fast path
# With unit strides, the windows of a padded image flattened over its spatial dims are plain
# shifted slices: output position p reads padded[p + offset(k)] for kernel offset k, when output
# positions are counted on the padded grid ("wide" rows, as long as the padded rows). Columns
# built that way are copies of long contiguous runs instead of kernel-width ones, and col2im
# becomes one contiguous add per kernel offset; the few wide positions past the end of each row
# are garbage, cropped from the output (and zero in the gradient fed back).
def unit_stride(win: Windows) -> bool:
    """Whether the wide layout applies (all strides 1)."""
    return all(s == 1 for s in win.stride)


def _wide_geometry(win: Windows) -> tuple[tuple[int, ...], int, int]:
    """Element strides of the padded grid, wide length, and the flat buffer's length."""
    padded = win.padded
    steps = tuple(math.prod(padded[i + 1 :]) for i in range(len(padded)))
    wide = win.out[0] * steps[0]
    reach = sum((k - 1) * d * st for k, d, st in zip(win.kernel, win.dilation, steps))
    return steps, wide, max(math.prod(padded), reach + wide)


@dataclass(frozen=True, slots=True)
class WideLayout:
    """The wide layout of one convolution's windows, worked out once for code that runs it
    many times over (a batch in parts): see the notes above `unit_stride`."""

    wide: int  # positions per item: the output's rows, each as long as a padded row
    length: int  # elements per channel of a `padded_flat` image
    grid: int  # elements per channel of the padded grid (the start of `length`)
    starts: tuple[int, ...]  # per kernel offset, in im2col's order: where its window begins
    inner: tuple[slice, ...]  # the image inside the padded grid
    wide_out: tuple[int, ...]  # the output's spatial shape with padded-length rows
    crop: tuple[slice, ...]  # the output inside `wide_out`


def wide_layout(win: Windows) -> WideLayout:
    """The `WideLayout` of `win` (unit strides)."""
    steps, wide, length = _wide_geometry(win)
    starts = tuple(
        sum(k * d * st for k, d, st in zip(offset, win.dilation, steps))
        for offset in itertools.product(*(range(k) for k in win.kernel))
    )
    return WideLayout(
        wide,
        length,
        math.prod(win.padded),
        starts,
        tuple(slice(lo, lo + n) for lo, n in zip(win.pad_lo, win.size)),
        win.out[:1] + win.padded[1:],
        (slice(None),) + tuple(slice(0, o) for o in win.out[1:]),
    )


def _flat_padded(x: Any, win: Windows, length: int) -> Any:
    """(N, C, length) zeros holding `x` padded on the padded grid (the tail stays zero)."""
    xp = xp_of(x)
    flat = xp.zeros(x.shape[:2] + (length,), dtype=x.dtype)
    grid = flat[:, :, : math.prod(win.padded)].reshape(x.shape[:2] + win.padded)
    inner = tuple(slice(lo, lo + n) for lo, n in zip(win.pad_lo, win.size))
    grid[(slice(None), slice(None), *inner)] = x
    return flat


# ------------------------------------------------------ channels-first columns
# Columns laid out (C * kernel, N * positions) turn a whole batch's convolution into one 2-D
# matmul (and its weight gradient into another): one large BLAS call that its threads share,
# instead of one small call per batch item. Positions are wide rows with unit strides (above),
# else the exact windows.
def _moved(a: Any, source: int, dest: int) -> Any:
    return xp_of(a).moveaxis(a, source, dest)


def positions_per_item(win: Windows) -> int:
    """Columns each batch item takes in the channels-first layout (wide rows: unit strides)."""
    return _wide_geometry(win)[1] if unit_stride(win) else win.out_numel


def im2col_cf(x: Any, win: Windows, dest: Any = None) -> Any:
    """The windows of `x` (N, C, *size) as columns (C * kernel, N * positions).

    Written into `dest` when given: a (C * kernel, N, positions) view, say the batch items'
    slice of a larger array's columns.
    """
    n, c = x.shape[:2]
    if unit_stride(win):
        view = wide_windows(padded_flat(x, win), win)
    else:
        view = _moved(window_view(x, win), 0, 1 + len(win.kernel))  # (C, *kernel, N, *out)
    if dest is None:
        return view.reshape((c * win.kernel_numel, n * positions_per_item(win)))
    dest.reshape(view.shape)[...] = view  # splits dest's axes: always a view of it
    return dest


def padded_flat(x: Any, win: Windows) -> Any:
    """`x` (N, C, *size) padded and flattened over its spatial dims, as wide windows read it.

    Unit strides only: (N, C, length), zero past the padded grid, so that every wide window
    of every item lies inside its own item's row.
    """
    return _flat_padded(x, win, _wide_geometry(win)[2])


def wide_windows(flat: Any, win: Windows) -> Any:
    """The wide windows of a `padded_flat` image as a (C, *kernel, N, positions) view."""
    n, c = flat.shape[:2]
    steps, wide, _ = _wide_geometry(win)
    item = flat.strides[2]
    return xp_of(flat).lib.stride_tricks.as_strided(
        flat,
        shape=(c,) + win.kernel + (n, wide),
        strides=(flat.strides[1],)
        + tuple(d * st * item for d, st in zip(win.dilation, steps))
        + (flat.strides[0], item),
    )


def from_cols_cf(out: Any, win: Windows, n: int, dest: Any = None, bias: Any = None) -> Any:
    """(O, N * positions) results as (N, O, *out), plus `bias` (O,) when given.

    Written into `dest` when given (a contiguous (N, O, *out) array, or part of one); the bias
    is added in the same pass as the copy out of the columns.
    """
    xp = xp_of(out)
    rows = out.shape[0]
    if unit_stride(win):
        grid = out.reshape((rows, n, win.out[0]) + win.padded[1:])
        grid = grid[(slice(None), slice(None), slice(None), *(slice(0, o) for o in win.out[1:]))]
    else:
        grid = out.reshape((rows, n) + win.out)
    moved = _moved(grid, 1, 0)
    if dest is None:
        dest = xp.empty(moved.shape, dtype=out.dtype)
    if bias is None:
        dest[...] = moved
    else:
        xp.add(moved, bias.reshape((1, rows) + (1,) * len(win.out)), out=dest)
    return dest


def to_cols_cf(g: Any, win: Windows, dest: Any = None) -> Any:
    """(N, O, *out) gradients as (O, N * positions), zero at the wide rows' extra positions.

    Written into `dest` when given: an (O, N, positions) view.
    """
    xp = xp_of(g)
    n, rows = g.shape[:2]
    if dest is None:
        dest = xp.empty((rows, n, positions_per_item(win)), dtype=g.dtype)
        flat = dest.reshape((rows, -1))
    else:
        flat = dest
    if unit_stride(win):
        grid = dest.reshape((rows, n, win.out[0]) + win.padded[1:])
        grid[...] = 0
        crop = tuple(slice(0, o) for o in win.out[1:])
        grid[(slice(None), slice(None), slice(None), *crop)] = _moved(g, 1, 0)
    else:
        dest.reshape((rows, n) + win.out)[...] = _moved(g, 1, 0)
    return flat


# Below this many wide positions per item, col2im first sums the shifts along the last spatial
# dim over whole contiguous rows, then adds one strided block per offset of the other dims: the
# strided adds, whose runs are only this long, dominate for small images. Measured 8x8 and
# 16x16 images 35% and 15% faster; 32x32 (1088 positions) 5% slower.
SHORT_WIDE_ROWS = 1024


def col2im_cf(cols: Any, win: Windows, n: int, dest: Any = None) -> Any:
    """The adjoint of `im2col_cf`: (C * kernel, N * positions) added back into (N, C, *size).

    Written into `dest` when given (a contiguous (N, C, *size) array, or part of one).
    """
    xp = xp_of(cols)
    c = cols.shape[0] // win.kernel_numel
    if not unit_stride(win):
        blocks = cols.reshape((c,) + win.kernel + (n,) + win.out)
        image = _add_blocks(_moved(blocks, 1 + len(win.kernel), 0), win)
        if dest is None:
            return image
        dest[...] = image
        return dest
    steps, wide, length = _wide_geometry(win)
    flat = xp.zeros((n, c, length), dtype=cols.dtype)
    by_channel = flat.transpose(1, 0, 2)
    if len(win.kernel) > 1 and wide < SHORT_WIDE_ROWS:  # 1-D: the item is one row
        lead_kernel, rows = win.kernel[:-1], _sum_last_dim_shifts(cols, win, n * wide)
        rows = rows.reshape((c, math.prod(lead_kernel), -1))
        for i, offset in enumerate(itertools.product(*(range(k) for k in lead_kernel))):
            start = sum(k * d * st for k, d, st in zip(offset, win.dilation, steps))
            by_channel[:, :, start : start + wide] += rows[:, i, : n * wide].reshape((c, n, wide))
    else:
        blocks = cols.reshape((c, win.kernel_numel, n, wide))
        for i, start in enumerate(wide_layout(win).starts):
            by_channel[:, :, start : start + wide] += blocks[:, i]
    grid = flat[:, :, : math.prod(win.padded)].reshape((n, c) + win.padded)
    inner = tuple(slice(lo, lo + size) for lo, size in zip(win.pad_lo, win.size))
    image = grid[(slice(None), slice(None), *inner)]
    if dest is None:
        return xp.ascontiguousarray(image)
    dest[...] = image
    return dest


def _sum_last_dim_shifts(cols: Any, win: Windows, span: int) -> Any:
    """Columns (C * kernel, span) summed over the last dim's kernel offsets, each shifted by it.

    Returns (C, kernel without its last dim, span + reach) rows. A shift along the last dim
    keeps every wide row's values inside that row (its extra positions, zero in a gradient,
    absorb it), so whole rows of the batch shift at once, as contiguous adds.
    """
    xp = xp_of(cols)
    last, dilation = win.kernel[-1], win.dilation[-1]
    lead = cols.shape[0] // last
    blocks = cols.reshape((lead, last, span))
    rows = xp.empty((lead, span + dilation * (last - 1)), dtype=cols.dtype)
    rows[:, :span] = blocks[:, 0]
    rows[:, span:] = 0
    for k in range(1, last):
        rows[:, k * dilation : k * dilation + span] += blocks[:, k]
    return rows
