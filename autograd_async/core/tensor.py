"""The Tensor: an array on a device plus its place in the autograd graph.

Op methods (`+`, `sum`, `reshape`, ...) are installed by `autograd_async.ops`, which holds their
math; this module holds the state every tensor carries and the operations that are not graph ops.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import devices as _devices
from .. import grad_mode
from .._tensor_str import format_tensor
from ..backends.sanitizer import sanitizer
from ..backends.sanitizer import watches as sanitizer_watches
from ..backends.sim_mode import sim_mode_state
from ..devices import CPU, Device
from ..dtypes import (  # noqa: F401 - the element types, re-exported from here
    bool_,
    complex64,
    complex128,
    default_complex,
    default_float,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from ..dtypes import dtype as DType  # noqa: N812
from ..dtypes import of as dtype_of
from .graph import Node, RemovableHandle
from .size import Size

# A shape read off an array is already a tuple of ints: make the Size without checking each one.
_new_size = tuple.__new__

# The default floating dtype when this module was imported (see `dtypes.default_float`).
DEFAULT_FLOAT = float32


def as_dtype(dtype: Any) -> np.dtype | None:
    """Normalise a dtype argument (None, a NumPy dtype, a name, `float`/`int`/`bool`)."""
    if dtype is None:
        return None
    if dtype is float:
        return default_float()
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"unknown dtype {dtype!r}") from exc


def infer_array(data: Any, dtype: Any, dev: Device) -> Any:
    """An array on `dev` from Python data or an array, with PyTorch's default dtypes."""
    dtype = as_dtype(dtype)
    if isinstance(data, Tensor):
        data = data._data
    if dtype is None and not hasattr(data, "dtype"):
        probe = np.asarray(data)
        if probe.dtype == np.float64:
            dtype = default_float()
        elif probe.dtype == np.complex128:
            dtype = default_complex()
        elif probe.dtype.kind in "iu":
            dtype = int64
        elif probe.dtype.kind not in "fcb":
            raise TypeError(f"cannot make a tensor from data of dtype {probe.dtype}")
        data = probe
    elif hasattr(data, "dtype") and np.dtype(data.dtype).kind not in "biufc":
        raise TypeError(f"cannot make a tensor from an array of dtype {data.dtype}")
    return _devices.asarray_on(data, dev, dtype)


class Tensor:
    """An n-dimensional array on a device, recording the operations that made it."""

    __slots__ = (
        "_data",
        "_rg",
        "_grad",
        "_grad_fn",
        "_output_nr",
        "device",
        "_base",
        "_version_source",
        "_view_version",
        "_ver",
        "_hooks",
        "_post_acc_hooks",
        "_grad_accumulator",
        # Set (never cleared) on a view made under no_grad or inference mode of a tensor that
        # required grad, to the mode's name: an in-place change to it with grad mode on is
        # refused. Unset on other tensors.
        "_no_grad_view",
        "__weakref__",
    )

    # The vmap level of a batched tensor (`autograd_async.func`); plain tensors are at level 0.
    _vmap_level = 0

    def __getstate__(self) -> Any:
        # Defined (as object's) so that pickle's protocols 0 and 1, which refuse classes with
        # __slots__ that keep the default, take tensors as protocol 2 does.
        return object.__getstate__(self)

    def __init__(
        self, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> None:
        dev = CPU if device is None else Device(device)
        _devices.check_available(dev)
        self._init(infer_array(data, dtype, dev), dev, None, 0, None)
        if requires_grad:
            self.requires_grad_(True)

    def _init(
        self, data: Any, dev: Device, grad_fn: Node | None, output_nr: int, base: Any
    ) -> None:
        self._data = data
        self.device = dev
        if dev._counted:  # the sim device count may not drop below it while it lives
            _devices.note_sim_user(dev, self)
        self._grad_fn = grad_fn
        self._rg = grad_fn is not None
        self._output_nr = output_nr
        self._base = base
        # The tensor whose counter counts this one's in-place changes (None: its own): a view's
        # base, or what a `detach()` was taken from; PyTorch shares one counter among them.
        if base is None:
            self._version_source = None  # `_view_version` is read only for views: left unset
        else:
            source = base._version_source
            if source is None:
                source = base
            self._version_source = source
            # A view's history is that of its base at this version; a later in-place change of
            # the base (or of another view) makes it stale (`history.refresh_if_stale`).
            self._view_version = source._ver
        self._ver = 0
        self._grad = None
        self._hooks = None
        self._post_acc_hooks = None
        self._grad_accumulator = None

    @classmethod
    def _wrap(
        cls,
        data: Any,
        dev: Device,
        grad_fn: Node | None = None,
        output_nr: int = 0,
        base: Any = None,
    ) -> Tensor:
        """Make a tensor around an existing array without copying or checking (internal)."""
        t = object.__new__(cls)
        t._init(data, dev, grad_fn, output_nr, base)
        return t

    # ----------------------------------------------------------------- attributes
    @property
    def shape(self) -> Size:
        """The tensor's shape."""
        return _new_size(Size, self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        """The shape, or the length of dimension `dim`."""
        return _new_size(Size, self._data.shape) if dim is None else self._data.shape[dim]

    @property
    def dtype(self) -> DType:
        """The element type (`aa.float32`, ...; NumPy accepts it wherever it takes a dtype)."""
        return dtype_of(self._data.dtype)

    def is_floating_point(self) -> bool:
        """True for a floating point dtype."""
        return self._data.dtype.kind in "fV"  # V: ml_dtypes' bfloat16

    def is_complex(self) -> bool:
        """True for a complex dtype."""
        return self._data.dtype.kind == "c"

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def numel(self) -> int:
        """The number of elements."""
        return int(self._data.size)

    @property
    def grad_fn(self) -> Node | None:
        """The node that made this tensor (None for leaves); set only by `history`."""
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn

    def _refresh_view(self) -> None:
        # A view whose base changed in place since its history was set gets a regenerated one
        # when read, as in PyTorch.
        if self._view_version != self._version_source._ver:
            history.refresh_if_stale(self)

    def _regenerate_view(self) -> None:
        # Installed by `ops.views`, which holds the strided-view op a regenerated history uses.
        raise RuntimeError("view histories are regenerated by autograd_async.ops.views")

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op."""
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this tensor."""
        if self._base is not None:
            self._refresh_view()
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set `requires_grad` on a leaf, in place; returns self."""
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and self._data.dtype.kind not in "fcV":  # V: ml_dtypes' bfloat16
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients, "
                f"got {self._data.dtype}"
            )
        self._rg = bool(requires_grad)
        return self

    @property
    def _version(self) -> int:
        """How many in-place changes the tensor's storage has seen (shared with its views)."""
        source = self._version_source
        return (self if source is None else source)._ver

    def _bump_version(self) -> None:
        source = self._version_source
        (self if source is None else source)._ver += 1
        if sim_mode_state.mode == "cuda" and sanitizer_watches(self.device):  # an in-place write
            sanitizer.write(self._data, self.device, "an in-place op")

    def _is_view(self) -> bool:
        """True for a tensor made by a view op: it shares its `_base`'s storage."""
        return self._base is not None

    @property
    def output_nr(self) -> int:
        """Which output of its `grad_fn` this tensor is (0 for leaves)."""
        return self._output_nr

    def data_ptr(self) -> int:
        """The address of the tensor's first element."""
        return _devices.data_ptr(self._data)

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (None until one arrives)."""
        if self._grad is None and self._grad_fn is not None and not self.retains_grad:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            _check_assigned_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's storage, outside the graph."""
        return Tensor._wrap(self._data, self.device)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._rg and value._data.dtype.kind not in "fcV":
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or complex "
                f"dtype, got {value.dtype}"
            )
        self._data = value._data
        self.device = value.device
        if value.device._counted:
            _devices.note_sim_user(value.device, self)

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf whose `.grad` is kept (see `retain_grad`)."""
        fn = self.grad_fn
        return bool(fn is not None and fn._hooks and self._output_nr in fn._hooks.retains_grad)

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The tensor with its dimensions reversed."""
        return self.permute(*range(self.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        """The tensor with its last two dimensions swapped."""
        if self.ndim < 2:
            raise RuntimeError(
                "tensor.mT is only supported on matrices or batches of matrices. Got "
                f"{self.ndim}-D tensor."
            )
        return self.transpose(-2, -1)

    # -------------------------------------------------------------- graph helpers
    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is not None:
            self.grad_fn._retain_grad_of(self)

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; it may return a new one."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_pre_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
            ref = self._grad_accumulator
            acc = ref() if ref is not None else None
            if acc is not None:  # a leaf's hooks are its accumulator's tensor pre-hooks
                acc._hooks_or_new().tensor_pre[0] = self._hooks
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(tensor)` after a gradient has been accumulated into this leaf's `.grad`."""
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        return RemovableHandle(self._post_acc_hooks, hook)

    def detach(self) -> Tensor:
        """A tensor sharing storage (and version counter) with this one, outside the graph."""
        alias = Tensor._wrap(self._data, self.device)
        source = self._version_source
        alias._version_source = self if source is None else source
        if type(self) is InferenceTensor:
            alias.__class__ = InferenceTensor
        return alias

    def is_inference(self) -> bool:
        """True for a tensor made in inference mode (see `inference_mode`)."""
        return type(self) is InferenceTensor

    def detach_(self) -> Tensor:
        """Take this tensor out of the graph, in place (views refuse, as in PyTorch)."""
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        history.clear_history(self)
        return self

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A leaf with its own copy of the data, `requires_grad` and `.grad`, but no hooks.

        As PyTorch's: hooks belong to the original, and only leaves can be deep-copied.
        """
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment."
            )
        copied = memo.get(id(self))
        if copied is not None:
            return copied
        new = object.__new__(type(self))
        new._init(self._data.copy(), self.device, None, 0, None)
        new._rg = self._rg
        memo[id(self)] = new
        if self.grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        extra = getattr(self, "__dict__", None)  # a subclass's own attributes
        if extra:
            new.__dict__.update(copy.deepcopy(extra, memo))
        return new

    def record_stream(self, stream: Any) -> None:
        """Mark the tensor's memory as used by `stream` (PyTorch's `Tensor.record_stream`): once
        the tensor is freed, its memory is not reused before the work queued on `stream` has
        completed. Needed when a tensor allocated on one stream is used on another."""
        handle = getattr(stream, "_handle", None)
        if handle is None:
            raise TypeError(f"record_stream(): expected a Stream, got {type(stream).__name__}")
        _devices.backend_for(self.device).streams.record_stream(self._data, handle)

    # -------------------------------------------------------------- conversions
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The tensor's NumPy array (shares memory); cpu tensors that don't require grad only,
        unless `force`: then also others, through a host copy where the memory is elsewhere."""
        if force:
            if sim_mode_state.mode == "cuda":
                sanitizer.host_read(self._data, self.device, "numpy()")
            return np.asarray(_devices.to_host(self._data))
        if self._rg and grad_mode.grad_enabled.get():  # under no_grad nothing could record
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        if self.device is not CPU:
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. "
                "Use Tensor.to('cpu') to copy the tensor to host memory first."
            )
        if sim_mode_state.mode == "cuda":
            sanitizer.host_read(self._data, self.device, "numpy()")
        return self._data

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        if sim_mode_state.mode == "cuda":
            sanitizer.host_read(self._data, self.device, "item()")
        return self._data.item()

    def tolist(self) -> Any:
        """The tensor as (nested) Python lists."""
        if sim_mode_state.mode == "cuda":
            sanitizer.host_read(self._data, self.device, "tolist()")
        return self._data.tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if sim_mode_state.mode == "cuda":
            sanitizer.host_read(self._data, self.device, "a conversion to a NumPy array")
        data = _devices.to_host(self._data)
        data = np.asarray(data)  # a 0-d result of NumPy arithmetic may be a NumPy scalar
        if dtype is not None:
            return data.astype(dtype, copy=bool(copy))
        return data.copy() if copy else data

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iu":
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            count = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {count} is ambiguous")
        if sim_mode_state.mode == "cuda":
            sanitizer.host_read(self._data, self.device, "bool()")
        return bool(self._data.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return format_tensor(np.asarray(self.__array__()), str(self.device), self._rg, self.grad_fn)


class InferenceTensor(Tensor):
    """A tensor made in inference mode: it never joins a graph outside inference mode.

    Inference mode turns a new tensor's class into this one (same layout), so ordinary tensors
    pay nothing for the checks, which live here and where tensors are saved or changed in place.
    """

    __slots__ = ()

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """As Tensor's, but refused outside inference mode (PyTorch's error)."""
        if requires_grad and not grad_mode.inference_enabled.get():
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        return super().requires_grad_(requires_grad)

    def _bump_version(self) -> None:
        # Every in-place op bumps the version after writing, so PyTorch's order is kept: the
        # data has changed when the error is raised.
        if not grad_mode.inference_enabled.get():
            raise RuntimeError(INFERENCE_INPLACE_MESSAGE)
        super()._bump_version()


NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead."
)

# The name users know the classes by (error messages name `autograd_async.tensor.Tensor`, pickles
# record it): `autograd_async.tensor` is this module under its former name (`_moved_modules`).
Tensor.__module__ = InferenceTensor.__module__ = "autograd_async.tensor"

INFERENCE_SAVED_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `autograd_async.no_grad()` "
    "instead of `autograd_async.inference_mode()`."
)
INFERENCE_INPLACE_MESSAGE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)


def mark_inference(tensors: Any) -> Any:
    """Make new plain tensors (one or a tuple) inference tensors; returns what it was given."""
    for t in tensors if type(tensors) is tuple else (tensors,):
        if type(t) is Tensor:
            t.__class__ = InferenceTensor
    return tensors


def mark_no_grad_view(tensors: Any, mode: str) -> None:
    """Record that views (one or a tuple) of a tensor requiring grad were made without grad mode:
    `mode` is "no_grad" or "inference"."""
    for t in tensors if type(tensors) is tuple else (tensors,):
        t._no_grad_view = mode


def made(t: Tensor) -> Tensor:
    """A tensor just created by a factory: an inference tensor inside inference mode."""
    if grad_mode.inference_enabled.get() and type(t) is Tensor:
        t.__class__ = InferenceTensor
    if sim_mode_state.mode == "cuda" and sanitizer_watches(t.device):  # creation writes, as in CSAN
        sanitizer.write(t._data, t.device, "tensor creation")
    return t


def _check_assigned_grad(tensor: Tensor, grad: Any) -> None:
    """Refuse a `.grad` that backward could not have produced, with PyTorch's errors."""
    if not isinstance(grad, Tensor):
        raise TypeError(
            "assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(grad).__name__}"
        )
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad._data.dtype != tensor._data.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad.dtype}' to a tensor with "
            f"grad_dtype '{tensor.dtype}'. The gradient must match the tensor's grad_dtype "
            "(defaults to the tensor's dtype)."
        )
    if grad.device is not tensor.device:
        raise RuntimeError(
            f"attempting to assign a gradient located on device '{grad.device}' to a tensor "
            f"located on device '{tensor.device}'. Please ensure that the gradient and the "
            "tensor are on the same device"
        )
    if grad._data.shape != tensor._data.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of size "
            f"'{list(tensor.shape)}'. Please ensure that the gradient and the tensor are the same "
            "size"
        )


# Last: history records nodes on tensors and imports this module's names through `graph`.
# `backward` and `backward_async` are installed by `autograd`, which sits above tensors.
from . import history  # noqa: E402
