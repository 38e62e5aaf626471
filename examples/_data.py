"""The handwritten-digits data the examples share, and the model they train on it.

scikit-learn ships the 1,797 8x8 digit images inside its package (`sklearn.datasets.load_digits`),
so nothing is downloaded. Pixels are whole numbers 0..16; a digit is a flat row of 64 of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import autograd_async as aa
from autograd_async import nn

PIXELS = 64
CLASSES = 10
# The split is fixed, not drawn from `--seed`: test accuracies of runs with different seeds are
# then measured on the same 360 images and can be compared.
SPLIT_SEED = 0
TEST_FRACTION = 0.2


@dataclass(frozen=True)
class Digits:
    """A train/test split; inputs are float32 rows of 64 pixels, labels int64 class indices."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    mean: np.ndarray  # per-pixel mean of the training inputs
    std: np.ndarray  # per-pixel standard deviation of the training inputs (1 where constant)

    def standardised(self) -> Digits:
        """The same split with inputs shifted and scaled by the training statistics."""
        return Digits(
            (self.x_train - self.mean) / self.std,
            self.y_train,
            (self.x_test - self.mean) / self.std,
            self.y_test,
            np.zeros_like(self.mean),
            np.ones_like(self.std),
        )


def load_digits() -> Digits:
    """The digits, split 80/20 (stratified, fixed seed), with the training set's statistics."""
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    images = sklearn_digits()
    x = images.data.astype(np.float32)
    y = images.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_FRACTION, random_state=SPLIT_SEED, stratify=y
    )
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    # Corner pixels are blank in every training image: leave them unscaled rather than divide by 0.
    std[std == 0] = 1.0
    return Digits(x_train, y_train, x_test, y_test, mean, std)


class Standardise(nn.Module):
    """(x - mean) / std with the training statistics kept as buffers, so checkpoints carry them."""

    def __init__(self, mean: np.ndarray, std: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("mean", aa.tensor(mean, dtype=aa.float32))
        self.register_buffer("std", aa.tensor(std, dtype=aa.float32))

    def forward(self, x: aa.Tensor) -> aa.Tensor:
        """Standardised inputs."""
        return (x - self.mean) / self.std


def mlp(hidden: int = 128) -> nn.Sequential:
    """The classifier: 64 pixels -> hidden -> hidden -> 10 logits, ReLU in between."""
    return nn.Sequential(
        nn.Linear(PIXELS, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, CLASSES),
    )


def accuracy(logits: aa.Tensor, labels: aa.Tensor) -> float:
    """The share of rows whose largest logit is at the labelled class."""
    return (logits.argmax(dim=1) == labels).float().mean().item()
