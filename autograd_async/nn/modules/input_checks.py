"""The check a built-in layer makes on what it is called with.

Without it a Python list or a NumPy array reaches the first op and fails there with an error about
`.ndim` or `.dtype` that names neither the layer nor what it wanted.
"""

from __future__ import annotations

from typing import Any

from ...core.tensor import Tensor
from ...type_names import type_name


def expect_tensor(module: Any, value: Any, argument: str = "input") -> None:
    """Raise a TypeError naming `module`'s class unless `value` is a Tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{type(module).__name__}.forward(): argument '{argument}' must be Tensor, not "
            f"{type_name(value)} (autograd_async.tensor(data) makes one)"
        )
