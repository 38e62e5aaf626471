"""Convolutions run tile by tile over the batch (the cache-sized path), against PyTorch.

The tiles only apply to large NumPy batches; these tests lower the thresholds so that small
cases take that path (one or two items a tile, a last tile shorter than the others), and compare
values and gradients with PyTorch as the other tests do.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograd_async.nn import functional as F  # noqa: N812
from autograd_async.ops import conv_arrays
from autograd_async.ops.windows import conv_windows

from .torch_reference import against_torch

RNG = np.random.default_rng(2)

TILE_CASES = [
    # (name, input shape, weight shape, with bias, keyword arguments)
    ("conv2d", (5, 3, 7, 8), (4, 3, 3, 3), True, {"padding": 1}),
    ("conv2d", (4, 4, 8, 8), (6, 2, 3, 2), True, {"padding": (1, 2), "groups": 2,
                                                   "dilation": (1, 2)}),
    ("conv2d", (3, 4, 9, 8), (5, 4, 3, 3), False, {"stride": 2, "padding": 1}),
    ("conv1d", (4, 3, 12), (2, 3, 3), True, {"padding": 2}),
    ("conv3d", (3, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, {"padding": (1, 0, 1)}),
]


@pytest.fixture(params=[1, 2], ids=["one-item-tiles", "two-item-tiles"])
def tile_every_batch(request, monkeypatch):
    """Every NumPy convolution runs in tiles of one or two batch items."""
    monkeypatch.setattr(conv_arrays, "TILE_MIN_BYTES", 0)
    monkeypatch.setattr(conv_arrays, "TILE_COLUMN_BYTES", 1)
    if request.param == 2:
        real = conv_arrays.batch_tiles

        def two_item_tiles(n, channels, dtype, win, array):
            tiles = real(n, channels, dtype, win, array)
            return None if tiles is None else [(s, min(n, s + 2)) for s in range(0, n, 2)]

        monkeypatch.setattr(conv_arrays, "batch_tiles", two_item_tiles)


@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), TILE_CASES)
def test_tiled_batches_match_torch(torch, tile_every_batch, name, xs, ws, bias, kwargs) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    arrays = [RNG.standard_normal(xs), RNG.standard_normal(ws)]
    arrays += [RNG.standard_normal(ws[0])] if bias else []
    against_torch(torch, lambda *t: ours(*t, **kwargs), lambda *t: theirs(*t, **kwargs),
                  *arrays)


def test_tiled_batch_with_one_gradient_wanted(torch, tile_every_batch) -> None:
    x, w = RNG.standard_normal((3, 3, 6, 6)), RNG.standard_normal((2, 3, 3, 3))
    for grad in ([False, True], [True, False]):
        against_torch(torch, lambda a, b: F.conv2d(a, b, padding=1),
                      lambda a, b: torch.nn.functional.conv2d(a, b, padding=1), x, w,
                      grad=grad)


def test_tiles_cover_the_batch_in_cache_sized_runs(monkeypatch) -> None:
    win = conv_windows((32, 32), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))
    x = np.zeros((1, 1), dtype=np.float32)
    # 16 channels x 9 offsets x 1,088 wide positions x 4 bytes: 0.63 MB of columns an item.
    assert conv_arrays.batch_tiles(32, 16, np.float32, win, x) == [(i, i + 1) for i in range(32)]
    monkeypatch.setattr(conv_arrays, "TILE_COLUMN_BYTES", 2 << 20)
    assert conv_arrays.batch_tiles(7, 16, np.float32, win, x) == [(0, 3), (3, 6), (6, 7)]
    assert conv_arrays.batch_tiles(2, 16, np.float32, win, x) is None  # small: runs whole
    assert conv_arrays.batch_tiles(32, 16, np.float32, win, [x]) is None  # not a NumPy array
