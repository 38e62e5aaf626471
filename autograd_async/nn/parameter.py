"""`Parameter`: a tensor that a `Module` registers as one of its learnable weights."""

from __future__ import annotations

from ..core.tensor import Tensor
from ..creation import empty


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and that modules register when assigned.

    `Parameter(t)` shares `t`'s storage, as PyTorch's does; ops on a Parameter give plain Tensors.
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter expects a Tensor (or None), got {type(data).__name__}; "
                "wrap data with autograd_async.tensor(...) first"
            )
        self._init(data._data, data.device, None, 0, None)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


__all__ = ["Parameter"]
