"""PyTorch's `torch.backends.mps` probes: Apple's Metal devices are not a device type here."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: there is no `mps` device type."""
    return False


def is_built() -> bool:
    """False: there is no `mps` device type."""
    return False
