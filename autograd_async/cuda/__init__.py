"""`aa.cuda`: what CUDA GPUs this process can use (PyTorch's `torch.cuda` queries)."""

from __future__ import annotations

from typing import Any

from ..devices import Device, backend_for, cuda_device_count, cuda_is_available
from . import amp


def is_available() -> bool:
    """True when CuPy is installed and at least one GPU is visible."""
    return cuda_is_available()


def device_count() -> int:
    """How many CUDA GPUs are visible (0 without CuPy or a driver)."""
    return cuda_device_count()


def _cuda(device: Any) -> Device:
    return Device("cuda", device) if isinstance(device, int) else Device(device)


def current_device() -> int:
    """The index of this thread's current GPU."""
    index = backend_for(Device("cuda:0")).current_device_index()
    if index is None:  # only a backend without CUDA's current-device rule answers None
        raise RuntimeError("the cuda device type has no current device here")
    return index


def set_device(device: Any) -> None:
    """Make `device` (an index or 'cuda:N') this thread's current GPU."""
    dev = _cuda(device)
    backend_for(dev).check_available(dev)
    backend_for(dev).use_device(dev)


__all__ = ["amp", "current_device", "device_count", "is_available", "set_device"]
