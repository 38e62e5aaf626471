"""`kl_divergence` and `register_kl`: the registry of closed-form KL divergences, dispatched on
the most specific pair of registered types (PyTorch's rules and errors). The pairs themselves
are registered by `kl_pairs` and `kl_cross_pairs`."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import total_ordering
from typing import Any

from ..core.tensor import Tensor
from ..creation import full_like
from ..ops.pointwise import xlogy
from .distribution import Distribution

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """A decorator that registers a function computing KL(p || q) for these two types."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new rule may be more specific than a memoised one
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered pair, ordered by how close its types sit in the MROs of a query."""

    __slots__ = ["types"]

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    """The most specific registered function for (type_p, type_q), or NotImplemented."""
    matches = [
        (super_p, super_q)
        for super_p, super_q in _KL_REGISTRY
        if issubclass(type_p, super_p) and issubclass(type_q, super_q)
    ]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
            f"register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return left_fun


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), over the batch shape; NotImplementedError where no closed form is known."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
            f"{q.__class__.__name__}"
        )
    return fun(p, q)


def infinite_like(value: Tensor) -> Tensor:
    """inf everywhere, shaped like `value`."""
    return full_like(value, float("inf"))


def x_log_x(value: Tensor) -> Tensor:
    """x log x, 0 at x = 0."""
    return xlogy(value, value)


def batch_trace_xxt(bmat: Tensor) -> Tensor:
    """trace(X X^T) over any batch dims."""
    return bmat.pow(2).sum((-2, -1))
