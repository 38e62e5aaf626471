"""Making tensors: `tensor`, `zeros`, `ones`, `full`, `arange`, `randn`, `rand`, `empty`, `*_like`.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from . import devices as _devices
from .devices import CPU, Device
from .dtypes import default_float
from .tensor import Tensor, as_dtype, infer_array, made


class Generator:
    """A seedable source of random numbers (PyTorch's `torch.Generator`)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def manual_seed(self, seed: int) -> Generator:
        """Reseed; returns self."""
        self._rng = np.random.default_rng(seed)
        return self

    @property
    def rng(self) -> np.random.Generator:
        """The NumPy generator behind it."""
        return self._rng

    def get_state(self) -> dict:
        """A snapshot of the generator's state, for `set_state` (a dict, not a byte tensor)."""
        return copy.deepcopy(self._rng.bit_generator.state)

    def set_state(self, state: dict) -> Generator:
        """Restore a state taken by `get_state`; returns self."""
        self._rng.bit_generator.state = copy.deepcopy(state)
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator."""
    return default_generator.manual_seed(seed)


def _device(device: Any) -> Device:
    dev = CPU if device is None else Device(device)
    _devices.check_available(dev)
    return dev


def _shape(size: tuple) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for n in size:
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"sizes must be non-negative integers, got {size!r}")
    return tuple(int(n) for n in size)


def _make(array: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    dev = _device(device)
    t = made(Tensor._wrap(_devices.asarray_on(array, dev) if dev is not CPU else array, dev))
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor (a copy) from data: Python floats give float32, float64 arrays stay float64."""
    dev = _device(device)
    array = infer_array(data, dtype, dev)
    if isinstance(data, (np.ndarray, Tensor)) or _devices.is_cupy_array(data):
        array = array.copy()
    t = made(Tensor._wrap(array, dev))
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor sharing memory with `data` when possible."""
    same_device = device is None or Device(device) is getattr(data, "device", None)
    if isinstance(data, Tensor) and dtype is None and same_device:
        return data
    dev = _device(device)
    return made(Tensor._wrap(infer_array(data, dtype, dev), dev))


def from_numpy(array: np.ndarray) -> Tensor:
    """A cpu tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return made(Tensor._wrap(array, CPU))


def _filled(fill: Any, size: tuple, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dtype = as_dtype(dtype) or default_float()
    return _make(np.full(_shape(size), fill, dtype=dtype), device, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _filled(0, size, dtype, device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _filled(1, size, dtype, device, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor."""
    dtype = as_dtype(dtype) or default_float()
    return _make(np.empty(_shape(size), dtype=dtype), device, requires_grad)


def full(
    size: Any, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor filled with `fill_value` (dtype inferred from it, as PyTorch does)."""
    if dtype is None:
        dtype = infer_array(fill_value, None, CPU).dtype
    return _filled(fill_value, (size,) if isinstance(size, int) else tuple(size), dtype, device,
                   requires_grad)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Evenly spaced values in [start, end)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if is_int else default_float()
    return _make(np.arange(start, end, step, dtype=as_dtype(dtype)), device, requires_grad)


def randn(
    *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Standard normal samples."""
    rng = (generator or default_generator).rng
    dtype = as_dtype(dtype) or default_float()
    return _make(rng.standard_normal(_shape(size)).astype(dtype), device, requires_grad)


def rand(
    *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform samples in [0, 1)."""
    rng = (generator or default_generator).rng
    dtype = as_dtype(dtype) or default_float()
    return _make(rng.random(_shape(size)).astype(dtype), device, requires_grad)


def _like(maker: Any, t: Tensor, dtype: Any, device: Any, requires_grad: bool, *extra: Any):
    return maker(
        *t.shape, *extra, dtype=dtype or t.dtype, device=device or t.device,
        requires_grad=requires_grad,
    )


def zeros_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Zeros shaped like `t`."""
    return _like(zeros, t, dtype, device, requires_grad)


def ones_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Ones shaped like `t`."""
    return _like(ones, t, dtype, device, requires_grad)


def empty_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Uninitialised, shaped like `t`."""
    return _like(empty, t, dtype, device, requires_grad)


def rand_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Uniform samples shaped like `t`."""
    return _like(rand, t, dtype, device, requires_grad)


def randn_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Normal samples shaped like `t`."""
    return _like(randn, t, dtype, device, requires_grad)


def full_like(
    t: Tensor, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """`fill_value` shaped like `t`."""
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)
