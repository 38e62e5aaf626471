"""How error messages name the type of a value a user passed."""

from __future__ import annotations

from typing import Any


def type_name(value: Any) -> str:
    """`list` for builtins, else the type with its module (`torch.Tensor`, `numpy.ndarray`).

    A bare `Tensor` in a message would leave open whose tensor it is: ours or another library's.
    """
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"
