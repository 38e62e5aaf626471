"""Differentiable ops: module functions, installed as Tensor methods and operators."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .arithmetic import (
    AddBackward0,
    DivBackward0,
    MulBackward0,
    NegBackward0,
    SubBackward0,
    TanhBackward0,
)
from .transfer import to


def add(input: Any, other: Any) -> Tensor:
    """input + other, broadcast."""
    return AddBackward0.apply(input, other)


def sub(input: Any, other: Any) -> Tensor:
    """input - other, broadcast."""
    return SubBackward0.apply(input, other)


def mul(input: Any, other: Any) -> Tensor:
    """input * other, broadcast."""
    return MulBackward0.apply(input, other)


def div(input: Any, other: Any) -> Tensor:
    """input / other, broadcast."""
    return DivBackward0.apply(input, other)


def neg(input: Tensor) -> Tensor:
    """-input."""
    return NegBackward0.apply(input)


def tanh(input: Tensor) -> Tensor:
    """Elementwise tanh."""
    return TanhBackward0.apply(input)


def _install() -> None:
    methods = {
        "__add__": add,
        "__radd__": lambda a, b: add(b, a),
        "__sub__": sub,
        "__rsub__": lambda a, b: sub(b, a),
        "__mul__": mul,
        "__rmul__": lambda a, b: mul(b, a),
        "__truediv__": div,
        "__rtruediv__": lambda a, b: div(b, a),
        "__neg__": neg,
        "add": add,
        "sub": sub,
        "mul": mul,
        "div": div,
        "neg": neg,
        "tanh": tanh,
        "to": to,
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)


_install()
