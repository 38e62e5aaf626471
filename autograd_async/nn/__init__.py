"""Neural-network building blocks (PyTorch's `torch.nn`)."""

from . import functional, init, modules, utils
from .modules import *  # noqa: F403 - the layers, listed once in modules.__all__
from .parameter import Parameter

__all__ = [*modules.__all__, "Parameter", "functional", "init", "utils"]
