"""What a tensor is and how it sits in memory: `itemsize`, `nbytes`, `layout`, `dim_order`,
`is_set_to`, `is_same_size`, the conjugate transposes `H` and `mH`, `sum_to_size`,
`new_empty_strided`, `as_subclass`, and the answers PyTorch gives for dense cpu tensors to its
sparse, named-tensor and pinned-memory questions.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import creation
from ..core.op import Op
from ..core.tensor import Tensor, as_dtype, made
from ..devices import data_ptr
from ..layouts import dim_order as layout_dim_order
from ..layouts import strided
from .dual import xp_of

REINFORCE_MESSAGE = (
    "reinforce() was removed.\n"
    "Use autograd_async.distributions instead.\n"
    "\n"
    "Instead of:\n"
    "\n"
    "probs = policy_network(state)\n"
    "action = probs.multinomial()\n"
    "next_state, reward = env.step(action)\n"
    "action.reinforce(reward)\n"
    "action.backward()\n"
    "\n"
    "Use:\n"
    "\n"
    "probs = policy_network(state)\n"
    "# NOTE: categorical is equivalent to what used to be called multinomial\n"
    "m = autograd_async.distributions.Categorical(probs)\n"
    "action = m.sample()\n"
    "next_state, reward = env.step(action)\n"
    "loss = -m.log_prob(action) * reward\n"
    "loss.backward()\n"
)


# ------------------------------------------------------------------ sizes and memory
def itemsize(self: Tensor) -> int:
    """Bytes per element."""
    return int(self._data.itemsize)


def nbytes(self: Tensor) -> int:
    """Bytes the elements take if stored densely: `numel() * itemsize` (as PyTorch counts it,
    also for an expanded tensor)."""
    return int(self._data.size) * int(self._data.itemsize)


def ndimension(self: Tensor) -> int:
    """The number of dimensions (`dim()`)."""
    return self._data.ndim


def dim_order(self: Tensor, *, ambiguity_check: Any = False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory: `(0, 1)` for a row-major matrix,
    `(1, 0)` for its transpose; `ambiguity_check` refuses an order that is not unique."""
    return layout_dim_order(self._data, ambiguity_check)


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """True when both tensors show the same memory with the same sizes and strides."""
    other = tensor._data
    return (
        self.device is tensor.device
        and self._data.shape == other.shape
        and self._data.strides == other.strides
        and self._data.dtype == other.dtype
        and data_ptr(self._data) == data_ptr(other)
    )


def is_same_size(self: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape."""
    return self.shape == other.shape


def const_data_ptr(self: Tensor) -> int:
    """The address of the first element (`data_ptr`), for reading."""
    return data_ptr(self._data)


def is_shared(self: Tensor) -> bool:
    """True for memory other processes can map: a CUDA tensor's (as PyTorch answers); cpu
    tensors here live in process memory."""
    return self.device.type == "cuda"


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """False: host memory here is never page-locked."""
    return False


# ------------------------------------------------------------------ layouts
def layout(self: Tensor) -> Any:
    """The tensor's layout: `aa.strided`."""
    return strided


def is_meta(self: Tensor) -> bool:
    """False: no tensor here is a meta tensor (one with a shape and no data)."""
    return False


def is_sparse(self: Tensor) -> bool:
    """False: every tensor here is strided."""
    return False


def dense_dim(self: Tensor) -> int:
    """The dense dimensions: all of a strided tensor's."""
    return self._data.ndim


def to_dense(self: Tensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """The tensor itself (it is dense), cast to `dtype` when one is given."""
    if dtype is None or as_dtype(dtype) == self._data.dtype:
        return self
    return self.to(dtype=dtype)


def _sparse_only(name: str) -> Any:
    def method(self: Tensor) -> Any:
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got Strided")

    method.__name__ = name
    method.__doc__ = f"PyTorch's `{name}` of sparse tensors; every tensor here is strided."
    return method


def volatile(self: Tensor) -> bool:
    """Always False: `volatile` was replaced by `no_grad`."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
    return False


def name(self: Tensor) -> None:
    """None: tensors here have no named dimensions."""
    return None


def reinforce(self: Tensor, reward: Any) -> None:
    """Removed from PyTorch long ago; says what to use instead."""
    raise RuntimeError(REINFORCE_MESSAGE)


# ------------------------------------------------------------------ conjugate transposes
def mH(self: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose of the last two dimensions."""
    if self.ndim < 2:
        raise RuntimeError(
            "tensor.mH is only supported on matrices or batches of matrices. Got "
            f"{self.ndim}-D tensor."
        )
    flipped = self.transpose(-2, -1)
    return flipped.conj() if self.is_complex() else flipped


def H(self: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose of a matrix."""
    if self.ndim == 0:
        warnings.warn(
            "Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", stacklevel=2
        )
        return self.conj() if self.is_complex() else self
    if self.ndim != 2:
        raise RuntimeError(
            "tensor.H is only supported on matrices (2-D tensors). Got "
            f"{self.ndim}-D tensor."
            + (" For batches of matrices, consider using tensor.mH" if self.ndim > 2 else "")
        )
    return mH(self)


# ------------------------------------------------------------------ shapes
def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """The tensor summed down to `size`, which must broadcast to its shape."""
    target = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    target = tuple(int(n) for n in target)
    shape = tuple(self.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(n != 1 and n != shape[lead + i] for i, n in enumerate(target)):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(shape)}}}.")
    if target == shape:
        return self
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1
    )
    summed = self.sum(dim=dims, keepdim=True) if dims else self
    return summed.reshape(target) if lead else summed


def new_empty_strided(
    self: Tensor,
    size: Any,
    stride: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A new tensor with the given sizes and strides (elements), by default of this tensor's
    dtype and device; its values are zeros (PyTorch leaves them uninitialised)."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if math.prod(size) else 0
    flat = creation.zeros(span, dtype=dtype or self.dtype, device=device or self.device)
    memory = flat._data
    strides = tuple(s * memory.itemsize for s in stride)
    data = xp_of(memory).lib.stride_tricks.as_strided(memory, shape=size, strides=strides)
    out = made(Tensor._wrap(data, flat.device))
    if requires_grad:
        out.requires_grad_(True)
    return out


# ------------------------------------------------------------------ aliases
class AliasBackward0(Op):
    """The same memory under another name (`as_subclass`): the gradient passes through."""

    __slots__ = ()
    op_name = "alias"
    is_view = True

    def forward(self, a: Any) -> Any:
        return a[...]

    def backward(self, g: Any) -> Any:
        return g


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """The tensor as an instance of `cls`, a subclass of Tensor: same memory, and still in
    the graph."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is not "
            "possible. Make sure your class inherits from Tensor."
        )
    alias = AliasBackward0.apply(self)
    out = object.__new__(cls)
    out._init(alias._data, alias.device, alias._grad_fn, alias._output_nr, alias._base)
    if alias._grad_fn is None:
        out._rg = False
    return out


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What `load_state_dict` puts in place of this parameter or buffer: `other` detached when
    assigning, else this tensor with `other`'s values copied in, detached."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


METHODS = {
    "itemsize": property(itemsize, doc=itemsize.__doc__),
    "nbytes": property(nbytes, doc=nbytes.__doc__),
    "layout": property(layout, doc=layout.__doc__),
    "is_meta": property(is_meta, doc=is_meta.__doc__),
    "is_sparse": property(is_sparse, doc=is_sparse.__doc__),
    "volatile": property(volatile, doc=volatile.__doc__),
    "name": property(name, doc=name.__doc__),
    "H": property(H, doc=H.__doc__),
    "mH": property(mH, doc=mH.__doc__),
    "ndimension": ndimension,
    "dim_order": dim_order,
    "is_set_to": is_set_to,
    "is_same_size": is_same_size,
    "const_data_ptr": const_data_ptr,
    "is_shared": is_shared,
    "is_pinned": is_pinned,
    "dense_dim": dense_dim,
    "to_dense": to_dense,
    "coalesce": _sparse_only("coalesce"),
    "is_coalesced": _sparse_only("is_coalesced"),
    "reinforce": reinforce,
    "sum_to_size": sum_to_size,
    "new_empty_strided": new_empty_strided,
    "as_subclass": as_subclass,
    "module_load": module_load,
}
