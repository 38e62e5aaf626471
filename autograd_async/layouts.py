"""Layouts and memory formats: `aa.strided`, `aa.contiguous_format`, `aa.channels_last`, ...

Every tensor here is strided (dense, with a step per dimension). A memory format names an order
of a dense tensor's dimensions in memory: `contiguous_format` is row-major, `channels_last`
keeps the channel dimension of an NCHW tensor innermost (NHWC in memory). The helpers read and
lay out NumPy/CuPy arrays; they know nothing of tensors.
"""

from __future__ import annotations

from typing import Any


class layout:  # noqa: N801 - PyTorch's name
    """How a tensor's elements are stored; `aa.strided` is the only one."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"aa.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # a module-level singleton: unpickles as itself


class memory_format:  # noqa: N801 - PyTorch's name
    """An order of a dense tensor's dimensions in memory."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"aa.{self._name}"

    def __reduce__(self) -> str:
        return self._name


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# The dimension order, outermost first, each channels-last format keeps in memory.
_ORDERS = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def require_memory_format(value: Any, name: str) -> memory_format:
    """`value` when it is a memory format (None means `contiguous_format`), else PyTorch's error."""
    if value is None:
        return contiguous_format
    if not isinstance(value, memory_format):
        raise TypeError(
            f"{name}(): argument 'memory_format' must be memory_format, not {type(value).__name__}"
        )
    return value


def _element_strides(array: Any) -> tuple[int, ...]:
    return tuple(s // array.itemsize for s in array.strides)


def _dense_in_order(array: Any, order: tuple[int, ...]) -> bool:
    """True when `array` is dense with its dimensions laid out in `order`, outermost first;
    dimensions of size 1 may have any stride (as PyTorch's contiguity checks allow)."""
    strides = _element_strides(array)
    expected = 1
    for dim in reversed(order):
        size = array.shape[dim]
        if size != 1 and strides[dim] != expected:
            return False
        expected *= size
    return True


def is_laid_out_as(array: Any, fmt: memory_format) -> bool:
    """Whether `array` is dense in memory format `fmt` (`is_contiguous(memory_format=)`);
    `preserve_format` asks for row-major, as PyTorch's check does."""
    if fmt is contiguous_format or fmt is preserve_format:
        return bool(array.flags.c_contiguous)
    rank, order = _ORDERS[fmt]
    return array.ndim == rank and _dense_in_order(array, order)


def lay_out_as(xp: Any, array: Any, fmt: memory_format) -> Any:
    """A copy of `array` dense in memory format `fmt`, with `array`'s shape."""
    if fmt is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if fmt is contiguous_format:
        return xp.ascontiguousarray(array)
    rank, order = _ORDERS[fmt]
    if array.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    inverse = tuple(order.index(d) for d in range(rank))
    return xp.ascontiguousarray(array.transpose(order)).transpose(inverse)


AMBIGUOUS_ORDER_MESSAGE = (
    "The tensor does not have unique dim order, or cannot map to exact one of the given memory "
    "formats."
)


def dim_order(array: Any, ambiguity_check: Any = False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory, ordered as PyTorch orders them.

    `ambiguity_check=True` refuses an array whose order is not unique (a dimension of size 1,
    or neighbours with the same stride); a list of memory formats refuses such an array unless
    it is dense in exactly one of them.
    """
    formats = list(ambiguity_check) if isinstance(ambiguity_check, (list, tuple)) else []
    for fmt in formats:
        require_memory_format(fmt, "dim_order")
    check = ambiguity_check if isinstance(ambiguity_check, bool) else True
    strides = _element_strides(array)
    several = 1 in array.shape or any(a == b for a, b in zip(strides, strides[1:]))
    if check and several and sum(is_laid_out_as(array, fmt) for fmt in formats) != 1:
        raise RuntimeError(AMBIGUOUS_ORDER_MESSAGE)
    order, ambiguous = _physical_order(array, bool(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return order


def _physical_order(array: Any, check: bool) -> tuple[tuple[int, ...], bool]:
    """PyTorch's logical-to-physical permutation of an elementwise result (an insertion sort by
    stride, size-1 and zero strides left where they fall), and whether it is ambiguous."""
    ndim = array.ndim
    if ndim <= 1:
        return tuple(range(ndim)), False
    row_major = is_laid_out_as(array, contiguous_format)
    channels = ndim == 4 and is_laid_out_as(array, channels_last)
    if row_major and not channels:
        return tuple(range(ndim)), False
    if channels and not row_major:
        return (0, *range(2, ndim), 1), False
    shape, strides = array.shape, _element_strides(array)

    def at_least(a: int, b: int) -> bool:
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def should_swap(a: int, b: int) -> int:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if at_least(shape[b], shape[a]) else 1
        if at_least(sb, sa):
            return -1
        return 1 if at_least(sa, sb) else 0

    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        right = i
        for left in reversed(range(i)):
            comparison = should_swap(perm[left], perm[right])
            if comparison > 0:
                perm[left], perm[right] = perm[right], perm[left]
                right = left
            elif comparison < 0:
                break
    ambiguous = check and any(should_swap(perm[i], perm[i + 1]) != -1 for i in range(ndim - 1))
    return tuple(reversed(perm)), ambiguous
