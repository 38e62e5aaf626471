"""`compile`: PyTorch's `torch.compile` entry point, which here returns what it is given.

There is no graph compiler behind this library (ops run eagerly on NumPy/CuPy), and
`torch.compile` promises the same results as the eager model, so the eager model itself keeps
that promise. Scripts that wrap their model in `torch.compile(...)` run unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["compile"]


def compile(  # noqa: A001 - PyTorch's name
    model: Callable[..., Any] | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable[..., Any] = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> Any:
    """Return `model` unchanged (as a decorator without `model`): eager execution is the only
    mode here, and it gives the results a compiled model must give."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError(f"compile(): model must be callable, got {type(model).__name__}")
    return model
