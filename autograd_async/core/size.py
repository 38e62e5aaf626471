"""`Size`: a tensor's shape, a tuple of ints as PyTorch's `torch.Size` is.

A plain tuple would do for indexing and comparison, but programs also call `numel()` on a shape,
test `isinstance(s, Size)`, build one with `Size([2, 3])` and expect a sum of shapes to stay a
`Size`. A slice of a Size is a plain tuple (PyTorch's is a Size): overriding `__getitem__` in
Python would make every `x.shape[0]` several times slower.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex

__all__ = ["Size"]


class Size(tuple[int, ...]):
    """The shape of a tensor: an immutable tuple of non-negative ints."""

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        try:
            items = tuple(operator.index(s) for s in sizes)
        except TypeError as exc:
            raise TypeError(
                f"Size() takes an iterable of ints, got {type(sizes).__name__} {sizes!r}"
            ) from exc
        return tuple.__new__(cls, items)

    def __add__(self, other: tuple[Any, ...]) -> Size:  # type: ignore[override]
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __mul__(self, times: SupportsIndex) -> Size:
        return tuple.__new__(Size, tuple.__mul__(self, times))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"Size({list(self)})"

    def __reduce__(self) -> tuple[type[Size], tuple[tuple[int, ...]]]:
        return (Size, (tuple(self),))

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for `Size([])`)."""
        count = 1
        for length in self:
            count *= length
        return count
