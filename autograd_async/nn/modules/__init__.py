"""The layers of `autograd_async.nn`."""

from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleList, Sequential
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import IncompatibleKeys, Module
from .normalization import LayerNorm
from .sparse import Embedding

# isort: split
from .activations_more import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softplus,
    Softsign,
    Tanhshrink,
)
from .losses_more import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    NLLLoss,
    SmoothL1Loss,
)

__all__ = [
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "Identity",
    "IncompatibleKeys",
    "LayerNorm",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "Module",
    "ModuleList",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
]
__all__ += [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CELU",
    "CosineEmbeddingLoss",
    "ELU",
    "GLU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "LeakyReLU",
    "LogSigmoid",
    "MarginRankingLoss",
    "Mish",
    "NLLLoss",
    "PReLU",
    "ReLU6",
    "SELU",
    "SiLU",
    "SmoothL1Loss",
    "Softplus",
    "Softsign",
    "Tanhshrink",
]
