"""The layers of `autograd_async.nn`."""

from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .bilinear import Bilinear
from .container import ModuleList, Sequential
from .containers_dict import ModuleDict, ParameterDict, ParameterList
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import IncompatibleKeys, Module
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = [
    "Bilinear",
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
    "ModuleDict",
    "ModuleList",
    "ParameterDict",
    "ParameterList",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "Unflatten",
]
