"""Utilities built on the core (PyTorch's `torch.utils`): `checkpoint` and `data` loading."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
