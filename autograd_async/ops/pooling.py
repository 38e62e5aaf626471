"""Pooling in 1, 2 and 3 dims: max, average, adaptive average and adaptive max.

Max pools are one node each (`ops.max_pool`); adaptive max pools find each window's winner on
the raw arrays and gather it through a differentiable gather node. Both have gradients of every
order, and their indices are PyTorch's, flat within each (H, W) plane.
Average pools are im2col, a sum and a constant divisor; adaptive average pools are products with
constant averaging matrices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import require_kernel_dtype, require_tensor
from ..core.tensor import Tensor
from .conv import Im2ColBackward0, expand_param
from .dual import xp_of
from .max_pool import max_pool
from .plane_gather import gather_trailing
from .windows import Windows, conv_windows


def _last_nan_wins(stacked: Any, winner: Any, axis: int) -> Any:
    """argmax's winners, except the last NaN of a window with NaNs (PyTorch's kernel's pick).

    argmax already picks a NaN there, the first; the extra passes run only when one exists.
    """
    xp = xp_of(stacked)
    picked = xp.take_along_axis(stacked, xp.expand_dims(winner, axis), axis=axis)
    has_nan = xp.isnan(xp.squeeze(picked, axis)) if stacked.dtype.kind == "f" else None
    if has_nan is None or not bool(has_nan.any()):
        return winner
    backwards = xp.flip(xp.isnan(stacked), axis=axis).argmax(axis=axis)
    return xp.where(has_nan, stacked.shape[axis] - 1 - backwards, winner)


# ---------------------------------------------------------------- arguments
def _check_rank(input: Tensor, dims: int, op: str) -> Tensor:
    """`input` as (N, C, *size), raising PyTorch's error for other ranks."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (dims + 1, dims + 2) or 0 in input.shape[-dims - 1 :]:
        raise RuntimeError(
            f"{op}: Expected {dims + 1}D or {dims + 2}D (batch mode) non-empty tensor for input, "
            f"but got: {list(input.shape)}"
        )
    return input if input.ndim == dims + 2 else input.unsqueeze(0)


def _unbatch(out: Tensor, input: Tensor, dims: int) -> Tensor:
    return out if input.ndim == dims + 2 else out.squeeze(0)


def _pool_windows(
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    dims: int,
    op: str,
) -> Windows:
    kernel = expand_param(kernel_size, dims, "kernel_size", op)
    stride = (
        kernel
        if stride is None or stride == [] or stride == ()
        else expand_param(stride, dims, "stride", op)
    )
    pads = expand_param(padding, dims, "padding", op)
    dilation = expand_param(dilation, dims, "dilation", op)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: stride should not be zero, but got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got {list(dilation)}")
    for p, k, d in zip(pads, kernel, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    size = tuple(x.shape[2:])
    win = conv_windows(size, kernel, stride, dilation, pads, pads, ceil_mode)
    if any(o <= 0 for o in win.out):
        raise RuntimeError(
            f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output "
            f"size: ({'x'.join(map(str, (x.shape[1],) + win.out))}). Output size is too small"
        )
    return win


# ------------------------------------------------------------------- max
def _max_pool(
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    return_indices: bool,
    dims: int,
    op: str,
) -> Any:
    x = _check_rank(input, dims, op)
    if dims == 1 and not return_indices:  # PyTorch's one-dimensional kernel takes floats only
        require_kernel_dtype("max_pool1d_impl", x)
    require_kernel_dtype("max_pool2d", x, "fiu")
    win = _pool_windows(x, kernel_size, stride, padding, dilation, ceil_mode, dims, op)
    if not return_indices:
        return _unbatch(max_pool(x, win, False), input, dims)
    out, indices = max_pool(x, win, True)
    return _unbatch(out, input, dims), _unbatch(indices, input, dims)


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Max over sliding windows of (N, C, L); with `return_indices`, also where each max was."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Max over sliding windows of (N, C, H, W); indices are flat within each H x W plane."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Max over sliding windows of (N, C, D, H, W); indices are flat within each volume."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d"
    )


# ---------------------------------------------------------------- average
def _window_counts(win: Windows, include_pad: bool) -> np.ndarray:
    """Elements each window averages over, (*out), by PyTorch's rule for avg_pool."""
    counts = np.ones((), dtype=np.int64)
    for n, k, s, lo, out in zip(win.size, win.kernel, win.stride, win.pad_lo, win.out):
        start = np.arange(out) * s - lo
        end = np.minimum(start + k, n + lo)  # windows end at the far padding, ceil mode or not
        if include_pad:
            along = end - start
        else:
            along = np.minimum(end, n) - np.maximum(start, 0)
        counts = np.multiply.outer(counts, along)
    return counts


def _avg_pool(
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
    dims: int,
    op: str,
) -> Tensor:
    x = _check_rank(input, dims, op)
    require_kernel_dtype("avg_pool2d", x, "f", also=("int64",))
    win = _pool_windows(x, kernel_size, stride, padding, 1, ceil_mode, dims, op)
    n, c = x.shape[:2]
    cols = Im2ColBackward0.apply(x, win=win)
    sums = cols.reshape((n, c, win.kernel_numel) + win.out).sum(dim=2)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    if x.dtype.kind != "f":  # int64: the integer sum divided by the count, rounded toward zero
        xp = xp_of(x._data)
        count = divisor_override or xp.asarray(_window_counts(win, count_include_pad))
        whole = xp.abs(sums._data) // count
        out = Tensor._wrap(xp.where(sums._data < 0, -whole, whole), x.device)
    elif divisor_override is not None:
        out = sums * (1.0 / divisor_override)
    else:
        scale = 1.0 / _window_counts(win, count_include_pad)
        xp = xp_of(x._data)
        out = sums * Tensor._wrap(xp.asarray(scale, dtype=x.dtype), x.device)
    return _unbatch(out, input, dims)


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over sliding windows of (N, C, L)."""
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d"
    )


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over sliding windows of (N, C, H, W) (or the sum over `divisor_override`)."""
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        2,
        "avg_pool2d",
    )


def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over sliding windows of (N, C, D, H, W) (or the sum over `divisor_override`)."""
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        3,
        "avg_pool3d",
    )


# --------------------------------------------------------------- adaptive
def _output_size(output_size: Any, size: tuple[int, ...], op: str) -> tuple[int, ...]:
    dims = len(size)
    values = (
        (output_size,) * dims
        if output_size is None or isinstance(output_size, int)
        else (tuple(output_size))
    )
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        raise RuntimeError(f"{op}: output_size must be {dims} values, but got {list(values)}")
    out = tuple(n if o is None else int(o) for o, n in zip(values, size))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than zero, got {out}")
    return out


def _adaptive_bounds(n: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of each adaptive window: floor(i n / o), ceil((i + 1) n / o)."""
    i = np.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)


def _averaging_matrix(n: int, out: int) -> np.ndarray:
    """(out, n): row i averages the inputs of adaptive window i."""
    start, end = _adaptive_bounds(n, out)
    j = np.arange(n)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return inside / (end - start)[:, None]


def _check_adaptive_rank(input: Tensor, dims: int, op: str) -> None:
    if not isinstance(input, Tensor) or input.ndim not in (dims + 1, dims + 2):
        shape = list(input.shape) if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got {shape}")
    if 0 in input.shape[-dims:]:
        raise RuntimeError(
            f"{op}(): Expected input to have non-zero size for non-batch "
            f"dimensions, but got {list(input.shape)}"
        )


def _adaptive_avg(input: Tensor, output_size: Any, dims: int, op: str) -> Tensor:
    _check_adaptive_rank(input, dims, op)
    require_kernel_dtype("adaptive_avg_pool2d", input)
    size = tuple(input.shape[-dims:])
    out = _output_size(output_size, size, op)
    xp = xp_of(input._data)

    def matrix(n: int, o: int) -> Tensor:
        return Tensor._wrap(xp.asarray(_averaging_matrix(n, o), dtype=input.dtype), input.device)

    result = input
    for i in range(dims):  # one product per spatial dim, that dim moved last and back
        axis = input.ndim - dims + i
        moved = result.movedim(axis, -1) @ matrix(size[i], out[i]).T
        result = moved.movedim(-1, axis)
    return result


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over `output_size` adaptive windows of the last dim of (N, C, L)."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over an `output_size` grid of adaptive windows of (N, C, H, W)."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over an `output_size` grid of adaptive windows of (N, C, D, H, W)."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def max_over_windows(x: Tensor, positions: list[Any], out: tuple[int, ...]) -> tuple[Tensor, Any]:
    """The max of each window of (N, C, *size) and its flat index within the plane.

    `positions[i]` holds the input positions along spatial dim i of each window's elements:
    (out[i], k[i]) shared by every plane, or (N, C, out[i], k[i]) per plane. A window shorter
    than k repeats its last position (a repeat never changes a max, and the first occurrence
    wins ties). Adaptive and fractional max pooling pick their windows so.
    """
    data = x._data
    xp = xp_of(data)
    dims = len(positions)
    size = tuple(x.shape[2:])
    n, c = x.shape[:2]
    index = []
    for i, at in enumerate(positions):  # each (N|1, C|1, ..out_i.., ..k_i..), broadcast
        at = xp.asarray(at)
        at = at.reshape((1, 1) + at.shape) if at.ndim == 2 else at
        shape = list(at.shape[:2]) + [1] * (2 * dims)
        shape[2 + i], shape[2 + dims + i] = at.shape[2:]
        index.append(at.reshape(shape))
    planes = (
        xp.arange(n).reshape((n,) + (1,) * (2 * dims + 1)),
        xp.arange(c).reshape((1, c) + (1,) * (2 * dims)),
    )
    windows = data[(*planes, *index)]  # (N, C, *out, *k)
    flat_shape = windows.shape[: 2 + dims] + (-1,)
    stacked = windows.reshape(flat_shape)
    winner = _last_nan_wins(stacked, stacked.argmax(axis=-1), 2 + dims)[..., None]
    flat = None
    for i, at in enumerate(index):
        coord = xp.broadcast_to(at, windows.shape).reshape(flat_shape)
        coord = xp.take_along_axis(coord, winner, axis=-1)[..., 0]
        flat = coord if flat is None else flat * size[i] + coord
    assert flat is not None  # pooling has at least one spatial dimension
    indices = flat.astype(np.int64, copy=False)
    return gather_trailing(x, indices, dims, out), indices


def _adaptive_max(input: Tensor, output_size: Any, return_indices: bool, dims: int, op: str) -> Any:
    _check_adaptive_rank(input, dims, op)
    require_kernel_dtype(op, input)
    x = input if input.ndim == dims + 2 else input.unsqueeze(0)
    size = tuple(x.shape[2:])
    out = _output_size(output_size, size, op)
    positions = []
    for n, o in zip(size, out):
        start, end = _adaptive_bounds(n, o)
        widest = int((end - start).max())
        positions.append(np.minimum(start[:, None] + np.arange(widest), (end - 1)[:, None]))
    result, indices = max_over_windows(x, positions, out)
    result = _unbatch(result, input, dims)
    if not return_indices:
        return result
    return result, _unbatch(Tensor._wrap(indices, x.device), input, dims)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over `output_size` adaptive windows of the last dim of (N, C, L)."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over an `output_size` grid of adaptive windows of (N, C, H, W)."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over an `output_size` grid of adaptive windows of (N, C, D, H, W)."""
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def _with_indices(pool: Any) -> Any:
    """PyTorch's `*_with_indices` form of a max pool: the output and the indices, always."""
    name = f"{pool.__name__}_with_indices"

    def pool_with_indices(input: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        require_tensor(name, input)
        kwargs["return_indices"] = True
        return pool(input, *args, **kwargs)

    pool_with_indices.__name__ = pool_with_indices.__qualname__ = name
    pool_with_indices.__doc__ = f"`{pool.__name__}` with its indices."
    return pool_with_indices


adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)
max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)


FUNCTIONS: dict[str, Any] = {}  # torch has these as functions, not Tensor methods
