"""`Distribution`, the base of every distribution, and `ExponentialFamily`: shapes, argument
and sample validation with PyTorch's errors, and the defaults derived from the abstract methods."""

from __future__ import annotations

import warnings
from typing import Any

from ..autograd import grad
from ..core.tensor import Tensor
from ..grad_mode import no_grad
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution", "ExponentialFamily"]


def as_shape(shape: Any) -> tuple[int, ...]:
    """A shape argument (an int, a sequence of ints, or a Size) as a tuple."""
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(n) for n in shape)


def _shown(value: Tensor) -> str:
    """A parameter as PyTorch's distribution reprs show it: its value if one, else its size."""
    if value.numel() != 1:
        return str(tuple(value.shape))
    return str(value.item()) if value.ndim == 0 else str(value)


class Distribution:
    """The abstract base class of probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for distributions made from now on."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(
        self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None
    ) -> None:
        self._batch_shape = as_shape(batch_shape)
        self._event_shape = as_shape(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._validate_parameters()
        super().__init__()

    def _validate_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(
                f"{self.__class__} does not define `arg_constraints`. Please set "
                "`arg_constraints = {}` or initialize the distribution with "
                "`validate_args=False` to turn off validation.",
                stacklevel=3,
            )
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # cannot be checked
            if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                continue  # lazily made from another parameter, which is checked
            value = getattr(self, param)
            valid = constraint.check(value)
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n{value}"
                )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution with its batch dimensions expanded to `batch_shape`."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """The constraint each tensor argument must satisfy, by name."""
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint:
        """The constraint of the values the distribution takes."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, outside the graph."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterised sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """`n` samples (deprecated in PyTorch: use `sample((n,))`)."""
        warnings.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability density (or mass) at `value`."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at `value`."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of the cumulative distribution function at `value`."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new leading dimension."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, over the batch shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy), over the batch shape."""
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: Any = ()) -> tuple[int, ...]:
        """sample_shape + batch_shape + event_shape."""
        return as_shape(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value: Tensor) -> None:
        """Raise PyTorch's ValueError for a value of the wrong shape or outside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != self._event_shape:
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{tuple(value.shape)} vs {self._event_shape}."
            )
        actual_shape = tuple(value.shape)
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual_shape} vs {expected_shape}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. "
                "Please initialize the distribution with `validate_args=False` to turn off "
                "validation.",
                stacklevel=3,
            )
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls: type[Distribution], _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args_string = ", ".join(f"{p}: {_shown(self.__dict__[p])}" for p in param_names)
        return self.__class__.__name__ + "(" + args_string + ")"


BOTH_MESSAGE = "Either `probs` or `logits` must be specified, but not both."


def require_one_of(probs: Any, logits: Any) -> None:
    """PyTorch's ValueError unless exactly one of `probs` and `logits` is given."""
    if (probs is None) == (logits is None):
        raise ValueError(BOTH_MESSAGE)


def expand_parameters(
    self: Distribution, new: Any, names: tuple, batch_shape: tuple, event_shape: tuple = ()
) -> None:
    """Copy the parameters that exist (not yet computed lazy ones) expanded to `batch_shape`."""
    for name in names:
        if name in self.__dict__:
            setattr(new, name, getattr(self, name).expand(batch_shape + event_shape))
            if name in ("probs", "logits"):
                new._param = getattr(new, name)


def finish_expand(self: Distribution, new: Any, batch_shape: tuple, event_shape: tuple = ()) -> Any:
    """Initialise an expanded copy `new` of `self` with `self`'s validation setting."""
    Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


def enumerated(values: Tensor, batch_shape: tuple, expand: bool) -> Tensor:
    """A support's values along a new leading dim, expanded over the batch if asked."""
    values = values.reshape((-1,) + (1,) * len(batch_shape))
    if expand:
        values = values.expand((values.shape[0],) + batch_shape)
    return values


class ExponentialFamily(Distribution):
    """Distributions of the exponential family, p(x) = h(x) exp(<t(x), theta> - F(theta)):
    entropy and same-family KL come from the log normaliser F by autograd."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Any, **_: Any) -> Tensor:
        # Each family names its own natural parameters (Normal two, Poisson one): a signature
        # of (*Any, **Any) is the one that lets every override do so.
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, by the Bregman divergence of the log normaliser."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
