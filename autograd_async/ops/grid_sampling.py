"""Spatial transformers: affine_grid and grid_sample (bilinear/trilinear, nearest, bicubic;
zeros, border and reflection padding), in 2 and 3 spatial dims.

grid_sample is composed of differentiable ops, so the gradients with respect to the input (a
gather's, adding back at the sampled positions) and to the grid (through the interpolation
weights and the coordinate folding) follow from the ops it is built of. The arithmetic is
PyTorch's kernel's: the same unnormalisation, clipping and reflection of coordinates, the same
corner and tap choices, and the cubic convolution with A = -0.75.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

from .. import creation
from ..core.op import require_tensor, torch_type_name
from ..core.tensor import Tensor
from .elementwise import where

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75
_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


# ------------------------------------------------------------- affine_grid
def _base_coordinates(n: int, align_corners: bool) -> Any:
    """PyTorch's `linspace_from_neg_one`: n points spanning [-1, 1] (pixel centres without
    align_corners); one point is 0."""
    import numpy as np  # noqa: PLC0415 - kept beside its one use

    if n <= 1:
        return np.zeros(max(n, 0))
    points = np.linspace(-1.0, 1.0, n)
    return points if align_corners else points * (n - 1) / n


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, *size[2:], dims) of the affine maps `theta` (N, dims, dims + 1)."""
    import numpy as np  # noqa: PLC0415 - see _base_coordinates

    require_tensor("affine_grid", theta, "theta")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got torch.{theta.dtype}")
    size = list(size)
    shape = tuple(theta.shape)
    if len(size) == 4:
        if theta.ndim != 3 or shape[-2:] != (2, 3):
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                f"Got {_torch_size(shape)}."
            )
    elif len(size) == 5:
        if theta.ndim != 3 or shape[-2:] != (3, 4):
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                f"Got {_torch_size(shape)}."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # (x, y[, z], 1) at each output position, x along the last dim
    axes = [_base_coordinates(n, align_corners) for n in reversed(spatial)]
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]
    base = np.stack([*mesh, np.ones(tuple(spatial))], axis=-1).reshape((-1, len(spatial) + 1))
    base_t = creation.tensor(base, dtype=theta.dtype, device=theta.device)
    grid = base_t @ theta.transpose(1, 2)  # (N, positions, dims)
    return grid.reshape((size[0], *spatial, len(spatial)))


def _torch_size(shape: tuple) -> str:
    return f"torch.Size({list(shape)})"


# -------------------------------------------------------------- grid_sample
def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord: Tensor, size: int) -> Tensor:
    """coord clipped to [0, size - 1]; its gradient passes only strictly inside, as PyTorch's."""
    inside = (coord > 0) & (coord < size - 1)
    return where(inside, coord, coord.detach().clamp(0, size - 1))


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """coord folded back and forth into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    distance = (coord - low).abs()
    extra = distance.fmod(span)
    flips = (distance.detach() / span).floor()
    even = flips.remainder(2) == 0
    return where(even, extra + low, span - extra + low)


def _padded(coord: Tensor, size: int, padding: str, align_corners: bool) -> Tensor:
    """PyTorch's `compute_coordinates`: coordinates folded or clipped by the padding mode."""
    if padding == "border":
        return _clip(coord, size)
    if padding == "reflection":
        folded = (
            _reflect(coord, 0, 2 * (size - 1))
            if align_corners
            else _reflect(coord, -1, 2 * size - 1)
        )
        return _clip(folded, size)
    return coord


def _sample(flat: Tensor, sizes: tuple[int, ...], coords: list[Tensor], out: tuple) -> Tensor:
    """`flat` (N, C, prod(sizes)) at integer coordinates (N, *out) per dim (a float Tensor each),
    zero where any coordinate falls outside: (N, C, *out)."""
    n, c = flat.shape[:2]
    inside = None
    index = None
    for coord, size in zip(coords, sizes):
        ok = (coord >= 0) & (coord <= size - 1)
        inside = ok if inside is None else inside & ok
        clipped = coord.clamp(0, size - 1).to(dtype="int64")
        index = clipped if index is None else index * size + clipped
    assert index is not None and inside is not None  # sampling has at least one dimension
    positions = math.prod(out)
    index = index.reshape((n, 1, positions)).expand(n, c, positions)
    values = flat.gather(2, index).reshape((n, c, *out))
    return values * inside.unsqueeze(1).to(dtype=flat.dtype)


def _cubic_coefficients(t: Tensor) -> list[Tensor]:
    """The four taps' weights of PyTorch's cubic convolution at fraction t."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _check_grid_inputs(input: Tensor, grid: Tensor, mode: str) -> int:
    require_tensor("grid_sampler", input)
    require_tensor("grid_sampler", grid, "grid", 2)
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{torch_type_name(input.dtype)} and grid has {torch_type_name(grid.dtype)}"
        )
    if input.device != grid.device:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to be on same device, but input is on "
            f"{input.device} and grid is on {grid.device}"
        )
    if input.ndim != grid.ndim or input.ndim not in (4, 5):
        if grid.ndim == input.ndim - 1 or input.shape[0] != grid.shape[0]:
            raise RuntimeError(
                f"grid_sampler(): expected grid and input to have same batch size, but got "
                f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
            )
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    dims = input.ndim - 2
    if grid.shape[-1] != dims:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {dims} in last dimension, but got grid "
            f"with sizes {list(grid.shape)}"
        )
    if mode == "bicubic" and dims != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if any(n == 0 for n in input.shape[2:]):
        raise RuntimeError(
            f"grid_sampler(): expected input to have non-empty spatial dimensions, but input "
            f"has sizes {list(input.shape)} with dimension 2 being empty"
        )
    return dims


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """`input` (N, C, *size) sampled at the normalised positions `grid` (N, *out, dims)."""
    if mode not in _MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    dims = _check_grid_inputs(input, grid, mode)
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])  # (D,) H, W
    out = tuple(grid.shape[1:-1])
    flat = input.reshape((n, c, math.prod(sizes)))
    # grid's last dim is (x, y[, z]): x indexes the last spatial dim
    raw = [_unnormalize(grid[..., dims - 1 - i], sizes[i], align_corners) for i in range(dims)]
    if mode == "bicubic":
        return _bicubic(flat, sizes, raw, out, padding_mode, align_corners)
    coords = [_padded(x, size, padding_mode, align_corners) for x, size in zip(raw, sizes)]
    if mode == "nearest":
        return _sample(flat, sizes, [x.detach().round() for x in coords], out)
    lows = [x.detach().floor() for x in coords]
    fractions = [x - low for x, low in zip(coords, lows)]
    result = None
    for corner in itertools.product((0, 1), repeat=dims):
        weight = None
        for f, bit in zip(fractions, corner):
            w = f if bit else 1 - f
            weight = w if weight is None else weight * w
        assert weight is not None  # sampling has at least one dimension
        taps = [low + bit for low, bit in zip(lows, corner)]
        term = _sample(flat, sizes, taps, out) * weight.unsqueeze(1)
        result = term if result is None else result + term
    assert result is not None  # a grid has at least one corner
    return result


def _bicubic(
    flat: Tensor, sizes: tuple, raw: list[Tensor], out: tuple, padding: str, align_corners: bool
) -> Tensor:
    lows = [x.detach().floor() for x in raw]
    weights = [_cubic_coefficients(x - low) for x, low in zip(raw, lows)]
    result = None
    for i, j in itertools.product(range(4), repeat=2):  # (y tap, x tap)
        taps = [
            _padded(lows[0] + (i - 1), sizes[0], padding, align_corners).detach(),
            _padded(lows[1] + (j - 1), sizes[1], padding, align_corners).detach(),
        ]
        term = _sample(flat, sizes, taps, out) * (weights[0][i] * weights[1][j]).unsqueeze(1)
        result = term if result is None else result + term
    assert result is not None  # sixteen taps
    return result
