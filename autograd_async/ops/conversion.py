"""Tensor conveniences that record no graph op of their own: device moves (`cpu`, `cuda`),
`type`, sizes (`element_size`, `nelement`), `__format__`, and DLPack export.

`cpu()`/`cuda()` go through `to`, so they are the differentiable cross-device edge. DLPack hands
the tensor's own memory to the consumer (NumPy, PyTorch, CuPy): no copy, and writes through it are
seen here. As in PyTorch, a tensor that requires grad is refused (`detach()` first), since the
consumer would change values the graph may have saved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.tensor import Tensor, as_dtype
from ..devices import CPU, Device, backend_for
from .transfer import to

# PyTorch's legacy type names: x.type() == 'aa.FloatTensor'.
TYPE_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}
_DTYPE_OF_NAME = {name: np.dtype(dtype) for dtype, name in TYPE_NAMES.items()}


def cpu(self: Tensor) -> Tensor:
    """The tensor on the cpu (itself when it is there already); differentiable."""
    return to(self, "cpu")


def cuda(self: Tensor, device: Any = None, non_blocking: bool = False) -> Tensor:
    """The tensor on a CUDA GPU: `cuda()` (GPU 0), `cuda(1)`, `cuda('cuda:1')`; differentiable."""
    if device is None:
        device = "cuda:0"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    dev = Device(device)
    if dev.type != "cuda":
        raise ValueError(f"cuda(): expected a cuda device, got {dev}")
    return to(self, dev)


def is_cuda(self: Tensor) -> bool:
    """True when the tensor is on a CUDA GPU."""
    return self.device.type == "cuda"


def is_cpu(self: Tensor) -> bool:
    """True when the tensor is on the cpu."""
    return self.device.type == "cpu"


def type_name(t: Tensor) -> str:
    """PyTorch's type string: 'aa.FloatTensor', 'aa.cuda.LongTensor', 'aa.sim.DoubleTensor'."""
    where = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"aa.{where}{TYPE_NAMES.get(t.dtype.name, t.dtype.name)}Tensor"


def type_or_cast(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """Without `dtype`, the type string ('aa.FloatTensor'); with one (a dtype or a type string
    such as 'aa.DoubleTensor' or 'torch.DoubleTensor'), the tensor cast to it."""
    if dtype is None:
        return type_name(self)
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        name = dtype.rsplit(".", 1)[-1].removesuffix("Tensor")
        if name not in _DTYPE_OF_NAME:
            raise ValueError(f"type(): invalid type: {dtype!r}")
        dtype = _DTYPE_OF_NAME[name]
    return to(self, dtype=as_dtype(dtype))


def element_size(self: Tensor) -> int:
    """Bytes per element."""
    return int(self.dtype.itemsize)


def nelement(self: Tensor) -> int:
    """The number of elements (`numel`)."""
    return self.numel()


def format_(self: Tensor, spec: str) -> str:
    """`f"{loss:.4f}"`: a 0-d tensor formats as its number; others only with an empty spec."""
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError(
            f"unsupported format string passed to Tensor.__format__ ({spec!r}): only 0-d "
            f"tensors take a format spec, this one has shape {tuple(self.shape)}"
        )
    return repr(self)


def _exportable(t: Tensor) -> None:
    if t.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if t.device is not CPU and backend_for(t.device).host_memory:  # host memory, other label
        raise BufferError(
            f"__dlpack__: a tensor on {t.device} (a simulated device) cannot be exported; "
            "move it with .cpu() first"
        )


def dlpack(
    self: Tensor,
    *,
    stream: Any = None,
    max_version: Any = None,
    dl_device: Any = None,
    copy: Any = None,
) -> Any:
    """A DLPack capsule of the tensor's memory (no copy), for `from_dlpack` of any library."""
    _exportable(self)
    given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
    return self._data.__dlpack__(**{k: v for k, v in given.items() if v is not None})


def dlpack_device(self: Tensor) -> tuple[int, int]:
    """The DLPack (device type, index) of the tensor's memory: (1, 0) cpu, (2, N) cuda:N."""
    _exportable(self)
    return self._data.__dlpack_device__()


METHODS = {
    "cpu": cpu,
    "cuda": cuda,
    "is_cuda": property(is_cuda, doc=is_cuda.__doc__),
    "is_cpu": property(is_cpu, doc=is_cpu.__doc__),
    "type": type_or_cast,
    "element_size": element_size,
    "nelement": nelement,
    "__format__": format_,
    "__dlpack__": dlpack,
    "__dlpack_device__": dlpack_device,
}
