"""Data parallelism (PyTorch's `torch.nn.parallel`): `DistributedDataParallel` across ranks,
`DataParallel` across the devices of one process."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
