"""Resampling the trailing dims: `pad` (constant, reflect, replicate, circular) and `interpolate`
(nearest, nearest-exact, linear, bilinear, area).

Constant padding is one node whose adjoint is constant padding by the opposite amounts (a crop).
The other paddings and nearest interpolation pick input elements by index through the
differentiable gather node; linear and bilinear interpolation multiply by constant interpolation
matrices, one per resized dim. All have derivatives of every order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.op import Op, require_kernel_dtype, require_tensor
from ..core.tensor import Tensor
from .dual import xp_of
from .plane_gather import gather_trailing
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d


def _pad_slices(shape: tuple[int, ...], pads: tuple[tuple[int, int], ...]) -> tuple[tuple, tuple]:
    """(source, destination) slices copying the kept part of an input into its padded output."""
    lead = len(shape) - len(pads)
    src, dst = [slice(None)] * lead, [slice(None)] * lead
    for n, (lo, hi) in zip(shape[lead:], pads):
        start, stop = max(-lo, 0), n - max(-hi, 0)
        count = max(stop - start, 0)
        src.append(slice(start, start + count))
        dst.append(slice(max(lo, 0), max(lo, 0) + count))
    return tuple(src), tuple(dst)


def constant_pad_array(x: Any, pads: tuple[tuple[int, int], ...], value: float) -> Any:
    """`x` with its last len(pads) dims padded (negative: cropped) by (before, after) pads."""
    lead = x.ndim - len(pads)
    shape = x.shape[:lead] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[lead:], pads))
    out = xp_of(x).full(shape, value, dtype=x.dtype)
    src, dst = _pad_slices(x.shape, pads)
    out[dst] = x[src]
    return out


class ConstantPadNdBackward0(Op):
    """Constant padding of the trailing dims; backward pads by the opposite amounts with zeros."""

    __slots__ = ("_pads",)
    op_name = "constant_pad_nd"

    def forward(self, x: Any, pads: tuple[tuple[int, int], ...], value: float) -> Any:
        self._pads = pads
        return constant_pad_array(x, pads, value)

    def backward(self, g: Any) -> Any:
        crop = tuple((-lo, -hi) for lo, hi in self._pads)
        if isinstance(g, Tensor):
            return ConstantPadNdBackward0.apply(g, pads=crop, value=0)
        return constant_pad_array(g, crop, 0)


# --------------------------------------------------------------------- pad
_NON_CONSTANT = ("reflect", "replicate", "circular")


def _source_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each padded position along a dim of size `n`, the input position it copies."""
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":  # negative pads crop first; positive ones wrap what is left
        start = max(-lo, 0)
        kept = n - start - max(-hi, 0)
        return start + (np.arange(-max(lo, 0), kept + max(hi, 0)) % kept)
    reflected = np.abs(i)  # reflect: mirror about the first and the last element
    return (n - 1) - np.abs((n - 1) - reflected)


def _check_non_constant(input: Tensor, pads: tuple[tuple[int, int], ...], mode: str) -> None:
    k = len(pads)
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    lead = input.ndim - k
    for d, (n, (lo, hi)) in enumerate(zip(input.shape[lead:], pads)):
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"pad: Padding size should be less than the corresponding input dimension, but "
                f"got: padding ({lo}, {hi}) at dimension {lead + d} of input "
                f"{list(input.shape)}"
            )
        kept = n - max(-lo, 0) - max(-hi, 0)
        if mode == "circular" and (lo > kept or hi > kept):
            raise RuntimeError(
                f"pad: Padding value causes wrapping around more than once: padding ({lo}, "
                f"{hi}) at dimension {lead + d} of input {list(input.shape)}"
            )


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims: `pad` is (last_before, last_after, second_last_before, ...)."""
    require_tensor("pad", input)
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.ndim}"
        )
    # PyTorch lists the last dim first; pads here are per dim in order.
    pads = tuple((pad[i], pad[i + 1]) for i in range(len(pad) - 2, -1, -2))
    if mode == "constant":
        lead = input.ndim - len(pads)
        if any(n + lo + hi < 0 for n, (lo, hi) in zip(input.shape[lead:], pads)):
            raise RuntimeError(
                f"pad: the padding {list(pad)} would give a negative size for input of size "
                f"{list(input.shape)}"
            )
        return ConstantPadNdBackward0.apply(input, pads=pads, value=0 if value is None else value)
    if mode not in _NON_CONSTANT:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_non_constant(input, pads, mode)
    if mode != "circular":
        kernel = "reflection" if mode == "reflect" else "replication"
        require_kernel_dtype(f"{kernel}_pad{len(pads)}d", input, "fiuc")
    lead = input.ndim - len(pads)
    size = input.shape[lead:]
    index = _joint_index([_source_index(n, lo, hi, mode) for n, (lo, hi) in zip(size, pads)], size)
    out_size = tuple(n + lo + hi for n, (lo, hi) in zip(size, pads))
    return gather_trailing(input, xp_of(input._data).asarray(index), len(pads), out_size)


def _joint_index(per_dim: list[np.ndarray], size: tuple[int, ...]) -> np.ndarray:
    """Flat indices into the trailing dims of `size` for the grid of per-dim source positions."""
    flat = np.zeros((), dtype=np.int64)
    for index, n in zip(per_dim, size):
        flat = np.add.outer(flat * n, index)
    return flat.reshape(-1)


# ------------------------------------------------------------- interpolate
_SPATIAL = {"linear": 1, "bilinear": 2}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "area")
# PyTorch's kernel for each mode (and spatial rank, for nearest), named in its dtype errors.
_KERNELS = {
    "nearest": "compute_indices_weights_nearest",
    "linear": "compute_indices_weights_linear",
    "area": "adaptive_avg_pool2d",
    ("nearest", 2): "upsample_nearest2d_channels_last",
    "bilinear": "upsample_bilinear2d_channels_last",
}


def _check_interpolate_dtype(input: Tensor, mode: str) -> None:
    """Floats everywhere; uint8 images for nearest and bilinear only, as PyTorch's kernels."""
    base = "nearest" if mode.startswith("nearest") else mode
    kernel = _KERNELS.get((base, input.ndim - 2)) or _KERNELS[base]
    images = ("uint8",) if base in ("nearest", "bilinear") else ()
    require_kernel_dtype(kernel, input, "f", also=images)


def _interpolate_sizes(
    input: Tensor, size: Any, scale_factor: Any, recompute: bool | None
) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """Output sizes and the scale (input / output) each dim uses, None for in / out."""
    dims = input.ndim - 2
    if (size is None) == (scale_factor is None):
        which = "either" if size is None else "only one of"
        raise ValueError(f"{which} size or scale_factor should be defined")
    spatial = tuple(input.shape[2:])
    if size is not None:
        sizes = (size,) * dims if isinstance(size, int) else tuple(int(s) for s in size)
        if len(sizes) != dims:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {list(spatial)} and output size of {tuple(sizes)}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        return sizes, (None,) * dims
    factors = (
        (float(scale_factor),) * dims
        if isinstance(scale_factor, (int, float))
        else tuple(float(f) for f in scale_factor)
    )
    if len(factors) != dims:
        raise ValueError(
            "Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(spatial)} and scale_factor of shape "
            f"{factors}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
            "scale_factor in (s1, s2, ...,sK) format."
        )
    sizes = tuple(int(math.floor(n * f)) for n, f in zip(spatial, factors))
    scales = (None,) * dims if recompute else tuple(1.0 / f for f in factors)
    return sizes, scales


def _nearest_index(n: int, out: int, scale: float | None, exact: bool) -> np.ndarray:
    step = n / out if scale is None else scale
    dst = np.arange(out, dtype=np.float64)
    src = np.floor((dst + 0.5) * step if exact else dst * step).astype(np.int64)
    return np.minimum(src, n - 1)


def _linear_matrix(n: int, out: int, scale: float | None, align_corners: bool) -> np.ndarray:
    """(out, n) weights of linear interpolation from n points to `out`, PyTorch's rule."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        src = dst * ((n - 1) / (out - 1)) if out > 1 else np.zeros(out)
    else:
        step = n / out if scale is None else scale
        src = np.maximum((dst + 0.5) * step - 0.5, 0.0)
    low = np.minimum(np.floor(src).astype(np.int64), n - 1)
    high = np.minimum(low + 1, n - 1)
    frac = src - low
    matrix = np.zeros((out, n))
    rows = np.arange(out)
    np.add.at(matrix, (rows, low), 1 - frac)
    np.add.at(matrix, (rows, high), frac)
    return matrix


def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) by `size` or `scale_factor`."""
    require_tensor("interpolate", input)
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | "
            "bilinear | bicubic | trilinear"
        )
    if input.ndim not in (3, 4, 5) or mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            f"the modes: {' | '.join(_MODES)} (got {mode})"
        )
    needs = _SPATIAL.get(mode)
    if needs is not None and input.ndim != needs + 2:
        raise NotImplementedError(
            f"Got {input.ndim}D input, but {mode} mode needs {needs + 2}D input"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported")
    _check_interpolate_dtype(input, mode)
    sizes, scales = _interpolate_sizes(input, size, scale_factor, recompute_scale_factor)
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"interpolate: output sizes must be positive, but got {list(sizes)}")
    spatial = tuple(input.shape[2:])
    xp = xp_of(input._data)
    if mode == "area":
        if input.ndim == 5:
            raise NotImplementedError("interpolate: mode 'area' supports 3D and 4D input only")
        pool = adaptive_avg_pool1d if input.ndim == 3 else adaptive_avg_pool2d
        return pool(input, sizes)
    if mode.startswith("nearest"):
        index = _joint_index(
            [
                _nearest_index(n, o, s, mode == "nearest-exact")
                for n, o, s in zip(spatial, sizes, scales)
            ],
            spatial,
        )
        return gather_trailing(input, xp.asarray(index), len(spatial), sizes)
    if input.dtype.kind != "f":
        return _resample_image(input, spatial, sizes, scales, bool(align_corners))
    out = input
    for axis, (n, o, s) in enumerate(zip(spatial, sizes, scales)):
        matrix = Tensor._wrap(
            xp.asarray(_linear_matrix(n, o, s, bool(align_corners)), dtype=out.dtype),
            input.device,
        )
        if axis == len(spatial) - 1:
            out = out @ matrix.T
        else:
            out = matrix @ out
    return out


def _resample_image(
    input: Tensor, spatial: tuple, sizes: tuple, scales: tuple, align_corners: bool
) -> Tensor:
    """Bilinear resampling of a uint8 image as PyTorch's uint8 kernel does it: integer weights
    of 15 significant bits, one pass per dim (width first), each rounded back to uint8."""
    xp = xp_of(input._data)
    out = input._data.astype(np.int64)
    for axis in reversed(range(len(spatial))):
        weights = _linear_matrix(spatial[axis], sizes[axis], scales[axis], align_corners)
        bits = 0
        while bits < 22 and int(0.5 + weights.max() * (1 << (bits + 1))) < 1 << 15:
            bits += 1
        fixed = xp.asarray(
            np.trunc(weights * (1 << bits) + np.copysign(0.5, weights)), dtype=np.int64
        )
        moved = xp.moveaxis(out, axis + 2, -1)
        total = (moved @ fixed.T + (1 << (bits - 1))) >> bits
        out = xp.moveaxis(xp.clip(total, 0, 255), -1, axis + 2)
    return Tensor._wrap(xp.ascontiguousarray(out.astype(input.dtype)), input.device)


FUNCTIONS: dict[str, Any] = {}  # torch has these as functions, not Tensor methods
