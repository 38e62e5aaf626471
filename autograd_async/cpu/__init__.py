"""`aa.cpu`: PyTorch's `torch.cpu` queries, and its deprecated `amp` names."""

from __future__ import annotations

from . import amp


def is_available() -> bool:
    """The cpu is always there."""
    return True


def device_count() -> int:
    """One cpu device, as PyTorch counts it."""
    return 1


def current_device() -> str:
    """The cpu's device string."""
    return "cpu"


def synchronize(device: object = None) -> None:
    """Nothing to wait for: cpu ops complete before they return."""


__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]
