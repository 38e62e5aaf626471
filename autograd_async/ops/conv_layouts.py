"""How a convolution run by parts of its batch (`conv_items`) reads and writes its arrays.

Two layouts of a part's columns (C * kernel, items * positions):
- `WideRows` (unit strides): positions are the output's rows as long as the padded rows (see
  `windows`), so im2col copies long contiguous runs and col2im is one contiguous add per kernel
  offset; the few positions past each row's end are cropped from the output and kept zero in
  the gradient's rows.
- `ExactWindows` (any strides): positions are the output's own, read through one strided view.
Each keeps the padded input for backward, gives the windows of the whole batch as one view, and
moves a part's results in and out of the column layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .windows import (
    Windows,
    block_targets,
    pad_spatial,
    padded_flat,
    padded_windows,
    unit_stride,
    wide_layout,
    wide_windows,
)


def _moved_out(a: Any) -> Any:
    """(O, m, ...) as (m, O, ...), and back."""
    return a.swapaxes(0, 1)


class WideRows:
    """Unit strides: positions on the padded grid's rows (`windows.wide_layout`)."""

    zeroed_rows = True  # the positions past each row's end must read as zero gradient

    def __init__(self, win: Windows) -> None:
        self.win = win
        self.lay = wide_layout(win)
        self.positions = self.lay.wide
        self._crop = (slice(None), slice(None)) + self.lay.crop
        self._inner = (slice(None), slice(None)) + self.lay.inner

    def keep(self, x: Any) -> Any:
        """The padded input, flattened (`windows.padded_flat`)."""
        return padded_flat(x, self.win)

    def windows(self, kept: Any) -> Any:
        """The batch's windows as a (C, *kernel, N, positions) view of `kept`."""
        return wide_windows(kept, self.win)

    def out_into(self, rows: Any, dest: Any, bias: Any) -> None:
        """Results (O, m * positions) into `dest` (m, O, *out), plus `bias` when given."""
        result = _moved_out(
            rows.reshape(rows.shape[:1] + (dest.shape[0],) + self.lay.wide_out)[self._crop]
        )
        if bias is None:
            np.copyto(dest, result)
        else:
            np.add(result, bias, out=dest)

    def rows_from(self, g: Any, rows: Any) -> None:
        """The gradient `g` (m, O, *out) into `rows` (O, m * positions), zero where cropped."""
        np.copyto(
            rows.reshape((g.shape[1], g.shape[0]) + self.lay.wide_out)[self._crop], _moved_out(g)
        )

    def image_into(self, g_cols: Any, dest: Any, image: Any) -> None:
        """Gradient columns (C * kernel, m * positions) added back into `dest` (m, C, *size);
        `image` is scratch of `image_shape`."""
        c, m = image.shape[:2]
        blocks = g_cols.reshape((c, len(self.lay.starts), m, self.positions))
        image.fill(0)
        for k, begin in enumerate(self.lay.starts):
            image[:, :, begin : begin + self.positions] += blocks[:, k]
        grid = image[:, :, : self.lay.grid].reshape((c, m) + self.win.padded)
        np.copyto(dest, _moved_out(grid[self._inner]))

    def image_shape(self, c: int, m: int) -> tuple[int, ...]:
        return (c, m, self.lay.length)


class ExactWindows:
    """Any strides: positions are the output's, read through a strided view."""

    zeroed_rows = False

    def __init__(self, win: Windows) -> None:
        self.win = win
        self.positions = win.out_numel
        self._inner = (slice(None), slice(None)) + tuple(
            slice(lo, lo + n) for lo, n in zip(win.pad_lo, win.size)
        )
        self._targets = block_targets(win)

    def keep(self, x: Any) -> Any:
        """The padded input (N, C, *padded): `x` itself when there is no padding."""
        return pad_spatial(x, self.win)

    def windows(self, kept: Any) -> Any:
        """The batch's windows as a (C, *kernel, N, *out) view of `kept`."""
        return np.moveaxis(padded_windows(kept, self.win), 0, 1 + len(self.win.kernel))

    def out_into(self, rows: Any, dest: Any, bias: Any) -> None:
        """Results (O, m * positions) into `dest` (m, O, *out), plus `bias` when given."""
        result = _moved_out(rows.reshape(rows.shape[:1] + (dest.shape[0],) + self.win.out))
        if bias is None:
            np.copyto(dest, result)
        else:
            np.add(result, bias, out=dest)

    def rows_from(self, g: Any, rows: Any) -> None:
        """The gradient `g` (m, O, *out) into `rows` (O, m * positions)."""
        np.copyto(rows.reshape((g.shape[1], g.shape[0]) + self.win.out), _moved_out(g))

    def image_into(self, g_cols: Any, dest: Any, image: Any) -> None:
        """Gradient columns (C * kernel, m * positions) added back into `dest` (m, C, *size);
        `image` is scratch of `image_shape`."""
        c, m = image.shape[:2]
        blocks = g_cols.reshape((c, len(self._targets), m) + self.win.out)
        image.fill(0)
        lead = (slice(None), slice(None))
        for k, target in enumerate(self._targets):
            image[lead + target] += blocks[:, k]
        np.copyto(dest, _moved_out(image[self._inner]))

    def image_shape(self, c: int, m: int) -> tuple[int, ...]:
        return (c, m) + self.win.padded


def layout_of(win: Windows) -> WideRows | ExactWindows:
    """The layout a convolution with windows `win` runs by parts in."""
    return WideRows(win) if unit_stride(win) else ExactWindows(win)
