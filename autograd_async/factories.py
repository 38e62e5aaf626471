"""More of PyTorch's factories: `range` (deprecated, end included), `scalar_tensor`,
`randint_like`, `empty_strided`, and the signal windows `hann_window`, `hamming_window`,
`blackman_window`, `bartlett_window` and `kaiser_window`.

Windows are computed in float64 on the host with PyTorch's formulas, then made in the dtype and
on the device asked for; a periodic window is the symmetric one of length + 1 without its last
point.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

from .core.op import torch_type_name
from .core.tensor import Tensor, as_dtype
from .creation import _device, _make, default_device, empty, from_numpy, randint, tensor
from .devices import CPU, Device, check_available
from .dtypes import default_float
from .dtypes import dtype as DType  # noqa: N812


def range(  # noqa: A001 - PyTorch's name
    start: Any = 0,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Values from start to end inclusive by step (deprecated in PyTorch for arange)."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, which "
        "produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    dtype = as_dtype(dtype) or default_float()
    values = (start + np.arange(count, dtype=np.float64) * step).astype(dtype)
    return _make(values, device, requires_grad)


def scalar_tensor(
    s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A 0-d tensor holding `s`, in the default float dtype unless told otherwise."""
    if isinstance(s, Tensor):
        s = s.item()
    return tensor(
        s, dtype=as_dtype(dtype) or default_float(), device=device, requires_grad=requires_grad
    )


def randint_like(
    input: Tensor,
    *args: Any,
    low: Any = None,
    high: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers from [low, high) shaped like `input`, in its dtype unless told otherwise:
    `randint_like(input, high)` or `randint_like(input, low, high)`."""
    if not isinstance(input, Tensor):
        raise TypeError(
            "randint_like(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    bounds = list(args)
    if high is None and bounds:
        high = bounds.pop()
    if low is None and bounds:
        low = bounds.pop()
    if bounds or high is None:
        raise TypeError("randint_like() takes (input, high) or (input, low, high)")
    return randint(
        0 if low is None else low,
        high,
        tuple(input.shape),
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )


def empty_strided(
    size: Any, stride: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """An uninitialised tensor of `size` laid out with the element strides `stride`."""
    size, stride = tuple(int(n) for n in size), tuple(int(n) for n in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    dtype = as_dtype(dtype) or default_float()
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) if all(size) else 0
    storage = empty(max(extent, 0), dtype=dtype, device=device)
    out = storage.as_strided(size, stride) if all(size) else empty(size, dtype=dtype, device=device)
    out = out.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


def get_default_device() -> Device:
    """The device factories make tensors on when given none (the cpu unless
    `set_default_device` changed it)."""
    return default_device.device


def set_default_device(device: Any) -> None:
    """Make factories (tensor, zeros, arange, rand, ...) put tensors on `device` when given
    none; None restores the cpu. Tensors made from others (from_numpy, *_like) are unchanged."""
    dev = CPU if device is None else Device(device)
    check_available(dev)
    default_device.device = dev


def asarray(
    obj: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    copy: bool | None = None,
    requires_grad: bool | None = None,
) -> Tensor:
    """`obj` as a tensor, sharing its memory when it is a tensor or NumPy array that already has
    the dtype and device asked for (unless copy=True); copy=False refuses to copy."""
    target_dtype: np.dtype | DType | None = as_dtype(dtype)
    if isinstance(obj, Tensor):
        target_dtype = target_dtype or obj.dtype
        target_device = obj.device if device is None else Device(device)
        same = target_dtype == obj.dtype and target_device == obj.device
        if copy is False and not same:
            raise ValueError(
                f"can't alias tensor with dtype '{torch_type_name(obj.dtype)}' into dtype "
                f"'{torch_type_name(target_dtype)}'."
            )
        out = obj if same and not copy else obj.to(dtype=target_dtype, device=target_device)
        if copy and out is obj:
            out = obj.clone()
        if requires_grad:
            out.requires_grad_(True)
        return out
    if (
        isinstance(obj, np.ndarray)
        and not copy
        and _device(device) == CPU
        and (target_dtype is None or target_dtype == obj.dtype)
    ):
        out = from_numpy(obj)
        return out.requires_grad_(True) if requires_grad else out
    return tensor(obj, dtype=target_dtype, device=device, requires_grad=bool(requires_grad))


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule sharing the tensor's memory (`tensor.__dlpack__()`)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"to_dlpack(): argument 'tensor' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    return tensor.__dlpack__()


# ------------------------------------------------------------------ windows
def _window(
    name: str,
    window_length: int,
    periodic: bool,
    dtype: Any,
    device: Any,
    requires_grad: bool,
    symmetric: Any,
) -> Tensor:
    """The window `symmetric(n)` (float64 points of a symmetric window of length n), made
    periodic when asked, in `dtype` on `device`."""
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    dtype = as_dtype(dtype) or default_float()
    if dtype.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    _device(device)
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        values = symmetric(window_length + 1)[:-1] if periodic else symmetric(window_length)
    return _make(values.astype(dtype), device, requires_grad)


def _cosine_sum(n: int, *coefficients: float) -> np.ndarray:
    """sum_k (-1)^k a_k cos(2 pi k i / (n - 1)), the generalised cosine window."""
    phase = 2 * np.pi * np.arange(n) / (n - 1)
    return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hann window, 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window(
        "hann_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n: _cosine_sum(n, 0.5, 0.5),
    )


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hamming window, alpha - beta cos(2 pi n / (N - 1))."""
    return _window(
        "hamming_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n: _cosine_sum(n, alpha, beta),
    )


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Blackman window, 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window(
        "blackman_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n: _cosine_sum(n, 0.42, 0.5, 0.08),
    )


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Bartlett (triangular) window, 1 - |2 n / (N - 1) - 1|."""
    return _window(
        "bartlett_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n: 1 - np.abs(2 * np.arange(n) / (n - 1) - 1),
    )


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Kaiser window, I0(beta sqrt(1 - (2 n / (N - 1) - 1) ** 2)) / I0(beta)."""
    return _window(
        "kaiser_window",
        window_length,
        periodic,
        dtype,
        device,
        requires_grad,
        lambda n: np.kaiser(n, beta),
    )


def empty_permuted(
    size: Any,
    physical_layout: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """An uninitialised tensor of shape `size` whose dimensions lie in memory in the order
    `physical_layout` (outermost first): `empty_permuted((2, 3, 5), (0, 2, 1))` has strides
    (15, 1, 3)."""
    size = tuple(int(n) for n in size)
    order = tuple(int(d) for d in physical_layout)
    if len(size) != len(order):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}"
        )
    order = tuple(d + len(size) if d < 0 else d for d in order)
    if len(set(order)) != len(order) or not all(0 <= d < len(size) for d in order):
        raise RuntimeError("Duplicate dim not allowed")
    stored = empty(*[size[d] for d in order], dtype=dtype, device=device)
    inverse = sorted(builtins.range(len(order)), key=order.__getitem__)  # argsort of the layout
    out = stored.permute(*inverse)
    if requires_grad:
        out.requires_grad_(True)
    return out


def frombuffer(
    buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False
) -> Tensor:
    """A 1-d cpu tensor over the memory of an object with the buffer protocol (no copy):
    `count` elements of `dtype` from byte `offset` (-1: to the end)."""
    view = memoryview(buffer).cast("B")
    length = view.nbytes
    np_dtype = as_dtype(dtype)
    size = np.dtype(np_dtype).itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({length} bytes) minus 1"
        )
    if count < 0:
        if (length - offset) % size:
            raise ValueError(
                f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be "
                f"a multiple of element size ({size})"
            )
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(
            f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) "
            f"must not be greater than actual buffer length ({length} bytes)"
        )
    if view.readonly:
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable "
            "tensors. This means you can write to the underlying (supposedly non-writable) "
            "buffer using the tensor. You may want to copy the buffer to protect its data or "
            "make it writable before converting it to a tensor.",
            UserWarning,
            stacklevel=2,
        )
    array = np.frombuffer(view, dtype=np_dtype, count=count, offset=offset)
    if not array.flags.writeable:  # the tensor writes through, as PyTorch's does
        array = np.lib.stride_tricks.as_strided(array, writeable=True)
    out = from_numpy(array)
    if requires_grad:
        out.requires_grad_(True)
    return out


__all__ = [
    "asarray",
    "empty_permuted",
    "frombuffer",
    "set_default_device",
    "get_default_device",
    "bartlett_window",
    "blackman_window",
    "empty_strided",
    "hamming_window",
    "hann_window",
    "kaiser_window",
    "randint_like",
    "range",
    "scalar_tensor",
    "to_dlpack",
]
