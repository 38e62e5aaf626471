"""Activations that cut at a threshold: threshold, hardshrink and rrelu; and PyTorch's
top-level dropout functions (dropout, feature_dropout, alpha_dropout, feature_alpha_dropout),
whose `train` argument is required.

The dropouts follow ATen's `_dropout_impl`: a Bernoulli(1 - p) mask (one per channel for the
feature forms) scales the kept values by 1 / (1 - p); the alpha forms keep SELU's mean and
variance by sending the dropped values to SELU's negative saturation and rescaling.
"""

from __future__ import annotations

from typing import Any

from ..core.op import Op, require_tensor
from ..core.tensor import Tensor
from .activations import _checked_input, _MaskedSlope, _run
from .dropout_family import _dropout_impl
from .dual import mul_const, xp_of
from .random_fills import uniform_


class ThresholdBackward0(_MaskedSlope):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        return (
            xp_of(a)
            .where(a > self._args["threshold"], a, self._args["value"])
            .astype(a.dtype, copy=False)
        )

    def slope(self, x: Any) -> Any:
        return x > self._args["threshold"]


class HardshrinkBackward0(_MaskedSlope):
    __slots__ = ()

    def compute(self, a: Any) -> Any:
        lambd = self._args["lambd"]
        return xp_of(a).where((a > lambd) | (a < -lambd), a, 0).astype(a.dtype, copy=False)

    def slope(self, x: Any) -> Any:
        lambd = self._args["lambd"]
        return (x > lambd) | (x < -lambd)


class RreluWithNoiseBackward0(Op):
    """input * noise, the noise drawn per element (1 where input >= 0): its slope is the noise."""

    __slots__ = ("_noise",)
    saved_slots = ("_noise",)

    def forward(self, a: Any, noise: Any) -> Any:
        self._noise = noise
        return a * noise

    def backward(self, g: Any) -> Any:
        self.check_released()
        return mul_const(g, self._noise)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else value."""
    x = _checked_input(input, "threshold", "keep")
    return _run(
        ThresholdBackward0, "threshold", x, False, integers="keep", threshold=threshold, value=value
    )


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return _run(HardshrinkBackward0, "hardshrink", input, False, lambd=lambd)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    generator: Any = None,
) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element when training,
    and is (lower + upper) / 2 otherwise."""
    x = _checked_input(input, "rrelu", "refuse", "leaky_relu")
    data = x._data
    xp = xp_of(data)
    if training:
        slopes = uniform_(x.new_empty(tuple(x.shape)), lower, upper, generator=generator)._data
    else:
        slopes = (lower + upper) / 2
    noise = xp.where(data >= 0, 1, slopes).astype(data.dtype, copy=False)
    return RreluWithNoiseBackward0.apply(x, noise=noise)


def _dropout(name: str, input: Tensor, p: float, train: bool, feature: bool, alpha: bool) -> Tensor:
    """ATen's dropout forms: nn.functional's implementation, with ATen's error for a bad p."""
    require_tensor(name, input)
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _dropout_impl(input, p, train, False, feature=feature, alpha=alpha)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero each element with probability p, scaling the rest by 1 / (1 - p), when `train`."""
    return _dropout("dropout", input, p, train, False, False)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (dim 1) with probability p, scaling the rest, when `train`."""
    return _dropout("feature_dropout", input, p, train, True, False)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout that keeps a SELU network's mean and variance, when `train`."""
    return _dropout("alpha_dropout", input, p, train, False, True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels (dim 1), when `train`."""
    return _dropout("feature_alpha_dropout", input, p, train, True, True)


FUNCTIONS: dict[str, Any] = {
    "threshold": threshold,
    "hardshrink": hardshrink,
    "rrelu": rrelu,
    "dropout": dropout,
    "feature_dropout": feature_dropout,
    "alpha_dropout": alpha_dropout,
    "feature_alpha_dropout": feature_alpha_dropout,
}
NOT_METHODS = (
    "threshold",
    "rrelu",
    "dropout",
    "feature_dropout",
    "alpha_dropout",
    "feature_alpha_dropout",
)
