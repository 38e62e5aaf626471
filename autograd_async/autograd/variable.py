"""PyTorch's legacy `torch.autograd.Variable`: calling it gives a tensor (Variables and Tensors
are one since PyTorch 0.4), and `Variable._execution_engine.queue_callback` is the engine hook
that code written against PyTorch still uses to run something when a backward pass ends."""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor
from ..engine.engine import queue_callback


class _ExecutionEngine:
    """The part of PyTorch's `Variable._execution_engine` that user code calls."""

    @staticmethod
    def queue_callback(callback: Any) -> None:
        """Run `callback()` when the backward pass now running ends (see engine.queue_callback)."""
        queue_callback(callback)


class Variable:
    """`Variable(tensor, requires_grad=False)` is a leaf tensor sharing `tensor`'s data."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Any:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
