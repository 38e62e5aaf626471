"""Neural-network building blocks (PyTorch's `torch.nn`)."""

from . import functional, init, modules, utils
from .modules import *  # noqa: F403 - the layers, listed once in modules.__all__
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    *modules.__all__,
    "Buffer",
    "Parameter",
    "UninitializedBuffer",
    "UninitializedParameter",
    "functional",
    "init",
    "utils",
]


def __getattr__(name: str) -> object:
    """`nn.parallel`, `nn.DataParallel` and `nn.SyncBatchNorm` load the collectives: only when
    first used."""
    if name == "parallel":
        import importlib  # noqa: PLC0415 - the lazy submodule

        return importlib.import_module(".parallel", __name__)
    if name == "DataParallel":
        from .parallel.data_parallel import DataParallel  # noqa: PLC0415 - see above

        return DataParallel
    if name == "SyncBatchNorm":
        from .modules.sync_batchnorm import SyncBatchNorm  # noqa: PLC0415 - see above

        return SyncBatchNorm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
