"""`Parameter`: a tensor that a `Module` registers as one of its learnable weights."""

from __future__ import annotations

from typing import Any

from ..core.size import Size
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


_SHAPE_UNKNOWN = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
    "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
    "one. Call `forward` to initialize the parameters before accessing their attributes."
)


class _Uninitialized(Tensor):
    """What uninitialised parameters and buffers share: no shape until `materialize` gives one.

    The tensor holds an empty array of its future dtype on its future device, so moving the
    module (`.to`, `.double()`) moves it too; `materialize` replaces the array and turns the
    object into its `cls_to_become`, so whoever holds it (an optimizer) holds the real one.
    A Tensor itself (with no slots of its own), so that it can read and replace the array.
    """

    __slots__ = ()
    cls_to_become: type

    @property
    def shape(self) -> Size:
        """Refused: an uninitialised tensor has no shape yet."""
        raise RuntimeError(_SHAPE_UNKNOWN)

    def size(self, dim: int | None = None) -> Size | int:
        """Refused: an uninitialised tensor has no shape yet."""
        raise RuntimeError(_SHAPE_UNKNOWN)

    def detach(self) -> Tensor:
        """Itself: state_dict keeps the uninitialised object, as PyTorch's does."""
        return self

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the tensor `shape` (uninitialised values) and make it a `cls_to_become`."""
        made = empty(
            tuple(shape) if not isinstance(shape, int) else (shape,),
            device=self.device if device is None else device,
            dtype=self._data.dtype if dtype is None else dtype,
        )
        self._data = made._data
        self.device = made.device
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape a lazy module learns from its first input."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape a lazy module learns from its first input."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(
        self,
        requires_grad: bool = False,
        device: Any = None,
        dtype: Any = None,
        persistent: bool = True,
    ) -> None:
        data = empty(0, device=device, dtype=dtype)
        self._init(data._data, data.device, None, 0, None)
        if requires_grad:
            self.requires_grad_(True)


class Buffer(Tensor):
    """A tensor that a `Module` registers as a buffer when assigned to it (in its state_dict
    unless `persistent=False`). Shares `data`'s storage and keeps its requires_grad."""

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer expects a Tensor (or None), got {type(data).__name__}")
        self._init(data._data, data.device, None, 0, None)
        if data.requires_grad:
            self.requires_grad_(True)
        self.persistent = persistent


def is_lazy(value: Any) -> bool:
    """Whether `value` is an uninitialised parameter or buffer."""
    return isinstance(value, _Uninitialized)


__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "is_lazy"]
