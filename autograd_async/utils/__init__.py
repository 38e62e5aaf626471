"""Utilities built on autograd (PyTorch's `torch.utils`): `checkpoint`."""

from . import checkpoint

__all__ = ["checkpoint"]
