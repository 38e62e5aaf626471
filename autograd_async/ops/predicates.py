"""Questions about tensors and their elements: is_nonzero, is_same_size, is_signed, is_conj,
is_neg, isin, isposinf, isneginf, isreal; and the identity-like positive, resolve_conj and
resolve_neg.

Tensors here never carry PyTorch's lazy conjugate or negative bits (conj and neg compute their
result), so is_conj and is_neg are False and the resolve functions return their input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.op import require_tensor
from ..core.tensor import Tensor
from .dual import data_of, xp_of


def _wrap(array: Any, like: Tensor) -> Tensor:
    return Tensor._wrap(xp_of(like._data).asarray(array), like.device)


def is_nonzero(input: Tensor) -> bool:
    """Whether the single element of `input` is not zero."""
    require_tensor("is_nonzero", input)
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(data_of(input).reshape(()) != 0)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    require_tensor("is_same_size", input)
    require_tensor("is_same_size", other, "other", 2)
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input: Tensor) -> bool:
    """Whether the tensor's dtype holds negative values (not bool, not unsigned)."""
    require_tensor("is_signed", input)
    return input.dtype.kind not in "bu"


def is_conj(input: Tensor) -> bool:
    """Whether the tensor has a lazy conjugate bit: never here."""
    require_tensor("is_conj", input)
    return False


def is_neg(input: Tensor) -> bool:
    """Whether the tensor has a lazy negative bit: never here."""
    require_tensor("is_neg", input)
    return False


def resolve_conj(input: Tensor) -> Tensor:
    """The tensor with its conjugate bit resolved: itself, which has none."""
    require_tensor("resolve_conj", input)
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """The tensor with its negative bit resolved: itself, which has none."""
    require_tensor("resolve_neg", input)
    return input


def positive(input: Tensor) -> Tensor:
    """`+input`: the tensor itself (bool tensors refused, as PyTorch does)."""
    require_tensor("positive", input)
    if input.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _elementwise_test(name: str, input: Tensor, test: Any) -> Tensor:
    require_tensor(name, input)
    data = data_of(input)
    if data.dtype.kind == "c":
        raise RuntimeError(f"{name} does not support complex inputs.")
    if data.dtype.kind not in "fc":
        return _wrap(xp_of(data).zeros(data.shape, dtype=bool), input)
    return _wrap(test(data), input)


def isposinf(input: Tensor) -> Tensor:
    """Where the elements are +inf."""
    return _elementwise_test("isposinf", input, lambda a: a == np.inf)


def isneginf(input: Tensor) -> Tensor:
    """Where the elements are -inf."""
    return _elementwise_test("isneginf", input, lambda a: a == -np.inf)


def isreal(input: Tensor) -> Tensor:
    """Where the elements have no imaginary part (everywhere, for real dtypes)."""
    require_tensor("isreal", input)
    data = data_of(input)
    xp = xp_of(data)
    if data.dtype.kind == "c":
        return _wrap(data.imag == 0, input)
    return _wrap(xp.ones(data.shape, dtype=bool), input)


def isin(
    elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False
) -> Tensor:
    """Where each of `elements` occurs in `test_elements` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(
            "isin() received an invalid combination of arguments - got "
            f"({type(elements).__name__}, {type(test_elements).__name__}), but expected one of "
            "(Tensor elements, Tensor test_elements, *, bool assume_unique, bool invert)"
        )
    like = elements if isinstance(elements, Tensor) else test_elements
    xp = xp_of(like._data)
    values = data_of(elements) if isinstance(elements, Tensor) else xp.asarray(elements)
    tests = (
        data_of(test_elements) if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    )
    if values.dtype.kind == "c" or tests.dtype.kind == "c":
        raise NotImplementedError("\"isin_default_cpu\" not implemented for 'ComplexFloat'")
    found = xp.isin(values, tests, assume_unique=assume_unique, invert=invert)
    return _wrap(xp.asarray(found).reshape(values.shape), like)


FUNCTIONS: dict[str, Any] = {
    "is_nonzero": is_nonzero,
    "is_same_size": is_same_size,
    "is_signed": is_signed,
    "is_conj": is_conj,
    "is_neg": is_neg,
    "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg,
    "positive": positive,
    "isposinf": isposinf,
    "isneginf": isneginf,
    "isreal": isreal,
    "isin": isin,
}
NOT_METHODS = ("isin",)
