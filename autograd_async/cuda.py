"""`aa.cuda`: what CUDA GPUs this process can use (PyTorch's `torch.cuda` queries)."""

from __future__ import annotations

from .devices import cuda_device_count, cuda_is_available


def is_available() -> bool:
    """True when CuPy is installed and at least one GPU is visible."""
    return cuda_is_available()


def device_count() -> int:
    """How many CUDA GPUs are visible (0 without CuPy or a driver)."""
    return cuda_device_count()


__all__ = ["device_count", "is_available"]
