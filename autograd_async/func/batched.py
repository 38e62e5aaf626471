"""Batched tensors: what a function under `vmap` sees in place of each mapped input.

A `BatchedTensor` wraps a `value` whose dim 0 is the batch of one vmap level; its shape is the
value's without that dim, the shape of one example. Ops on it go through batching rules that
run the op once on the values (`rules`), so the autograd graph is built from ordinary ops on
ordinary tensors whose first dims are batches: gradients of a batched computation are batched
too, and since no rule reduces over a batch dim, examples never mix. Under nested vmaps the
value of an outer level's tensor is itself batched at the inner level.
"""

from __future__ import annotations

from typing import Any

from ..batching import vmap_levels
from ..core.size import Size
from ..core.tensor import Tensor

ITEM_MESSAGE = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
    ".item() on a Tensor, please try to rewrite what you're doing with other operations. If "
    "error is occurring somewhere inside PyTorch internals, please file a bug report."
)
DATA_DEPENDENT_MESSAGE = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
    "We don't support that yet, please shout over at "
    "https://github.com/pytorch/functorch/issues/257 ."
)


class BatchedTensor(Tensor):
    """A tensor under `vmap`: `value` holds all examples, dim 0 being this level's batch."""

    __slots__ = ("value", "_vmap_level")
    value: Tensor

    @property
    def shape(self) -> Size:
        """The shape of one example."""
        return Size(self.value.shape[1:])

    def size(self, dim: int | None = None) -> Any:
        """The shape of one example, or its length along `dim`."""
        return self.shape if dim is None else self.shape[dim]

    @property
    def ndim(self) -> int:
        """The number of dims of one example."""
        return self.value.ndim - 1

    def dim(self) -> int:
        """The number of dims of one example."""
        return self.value.ndim - 1

    def numel(self) -> int:
        """The number of elements of one example."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to the batched value."""
        return self.value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.value.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set `requires_grad` of the batched value; returns self."""
        self.value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self) -> Any:
        """The node that made the batched value."""
        return self.value.grad_fn

    @property
    def is_leaf(self) -> bool:
        """Whether the batched value is a leaf."""
        return self.value.is_leaf

    @property
    def data(self) -> Tensor:
        """The batched value's data, batched the same way."""
        return batched(self.value.data, self._vmap_level)

    @data.setter
    def data(self, value: Tensor) -> None:
        # As before this setter existed: a batched tensor's data is its value's, set there.
        raise AttributeError("vmap: cannot set .data of a batched tensor; set its value's")

    def detach(self) -> Tensor:
        """The batched value detached, batched the same way."""
        return batched(self.value.detach(), self._vmap_level)

    def item(self) -> Any:
        """Refused under vmap, as PyTorch does."""
        raise RuntimeError(ITEM_MESSAGE)

    def tolist(self) -> Any:
        """Refused under vmap, as PyTorch does."""
        raise RuntimeError(ITEM_MESSAGE)

    def numpy(self, *, force: bool = False) -> Any:
        """Refused under vmap."""
        raise RuntimeError(ITEM_MESSAGE)

    def __bool__(self) -> bool:
        raise RuntimeError(DATA_DEPENDENT_MESSAGE)

    def __float__(self) -> float:
        raise RuntimeError(ITEM_MESSAGE)

    def __int__(self) -> int:
        raise RuntimeError(ITEM_MESSAGE)

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._vmap_level}, bdim=0, value=\n{self.value!r}\n)"

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise RuntimeError("vmap: a batched tensor cannot be pickled")


def batched(value: Tensor, level: int) -> BatchedTensor:
    """`value` (dim 0 the batch) as a tensor batched at vmap `level`."""
    t = object.__new__(BatchedTensor)
    t._init(value._data, value.device, None, 0, None)
    t.value = value
    t._vmap_level = level
    return t


def unwrap(x: Any, level: int) -> tuple[Any, bool]:
    """The value of `x` at `level` and whether it is batched there (dim 0 the batch)."""
    if isinstance(x, BatchedTensor) and x._vmap_level == level:
        return x.value, True
    return x, False


def top_level(inputs: Any) -> int:
    """The highest vmap level among the batched tensors in `inputs` (0: none)."""
    level = 0
    for x in inputs:
        lv = getattr(x, "_vmap_level", 0) if isinstance(x, Tensor) else 0
        if lv > level:
            level = lv
    return level


def level_size(level: int) -> int:
    """The batch size of the active vmap `level`."""
    for active in vmap_levels.get():
        if active.level == level:
            return active.size
    raise RuntimeError(f"vmap: level {level} is not active (a batched tensor escaped its vmap)")


def physical(x: Tensor) -> Tensor:
    """The plain tensor under every level of `x`, its batch dims first (outermost level first)."""
    while isinstance(x, BatchedTensor):
        x = x.value
    return x


def rewrap_like(plain: Tensor, like: Tensor) -> Tensor:
    """`plain`, shaped like `physical(like)`, batched at the same levels as `like`."""
    levels = []
    x = like
    while isinstance(x, BatchedTensor):
        levels.append(x._vmap_level)
        x = x.value
    for level in reversed(levels):
        plain = batched(plain, level)
    return plain
