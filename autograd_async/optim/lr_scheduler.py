"""Learning-rate schedulers (PyTorch's `torch.optim.lr_scheduler`), with PyTorch's recursive forms.

A scheduler is constructed after its optimizer and stepped after `optimizer.step()`; construction
takes the first step (epoch 0), as PyTorch's does. The schedulers live in `optim.schedules`, one
module per kind; this module is their public home.
"""

from .schedules.base import LRScheduler
from .schedules.composite import ChainedScheduler, ReduceLROnPlateau, SequentialLR
from .schedules.cyclic import (
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    OneCycleLR,
)
from .schedules.multiplicative import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]
