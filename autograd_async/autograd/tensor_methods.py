"""`Tensor.backward` and `Tensor.backward_async`, installed on the class when this package loads.

The tensor sits below the engine that runs a backward pass, so the methods that start one are
installed from here, as `ops` installs the op methods.
"""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor
from . import api


def backward(
    self: Tensor,
    gradient: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Compute gradients of this tensor into the leaves' `.grad` (blocks the calling thread)."""
    api.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


async def backward_async(
    self: Tensor,
    gradient: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Like `backward`, awaited: the caller's event loop keeps running meanwhile."""
    await api.backward_async(self, gradient, retain_graph, create_graph, inputs=inputs)


Tensor.backward = backward  # type: ignore[method-assign]  # installed here: see the docstring
Tensor.backward_async = backward_async  # type: ignore[method-assign]  # installed here too
