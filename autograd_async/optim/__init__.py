"""Optimizers (PyTorch's `torch.optim`), learning-rate schedulers and weight averaging.

`swa_utils` builds on `nn.Module`, and `nn` imports this package for `zero_grad`; it is loaded
on first access (PEP 562), once `nn` is whole.
"""

import importlib
from types import ModuleType

from . import lr_scheduler
from .adafactor import Adafactor
from .adagrad import Adadelta, Adagrad
from .adam import Adam, AdamW
from .adam_variants import NAdam, RAdam
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from .swap_in import swap_in_optimizer_params_and_state

__all__ = [
    "ASGD",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
    "swap_in_optimizer_params_and_state",
]


def __getattr__(name: str) -> ModuleType:
    if name == "swa_utils":
        return importlib.import_module(".swa_utils", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
