"""Neural-network building blocks (PyTorch's `torch.nn`)."""

from . import functional

__all__ = ["functional"]
