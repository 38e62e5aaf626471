"""Device backends: one module per device type behind one interface (see base.py).

Importing this package registers the built-in types; a new type registers itself the same way
(see docs/backends.md). The cuda backend does not import CuPy until a cuda device is used.
"""

from . import cudnn, mps  # torch.backends' cudnn and mps names
from .base import Backend
from .cpu import CpuBackend
from .cuda import CudaBackend
from .registry import BackendRegistry, backends
from .sim import SimBackend
from .sim_mode import set_sim_mode, sim_mode

backends.register(CpuBackend())
backends.register(SimBackend())
backends.register(CudaBackend())

__all__ = [
    "Backend",
    "BackendRegistry",
    "CpuBackend",
    "CudaBackend",
    "SimBackend",
    "backends",
    "cudnn",
    "mps",
    "set_sim_mode",
    "sim_mode",
]
