"""The `cuda` backend: CuPy arrays on NVIDIA GPUs.

CuPy is imported the first time a `cuda` device is used, never before: importing the library, or
recognising that an array is not CuPy's, does not load it.
"""

from __future__ import annotations

import importlib.util
from contextlib import AbstractContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Backend
from .cpu import host_values, out_of_range
from .cuda_streams import CudaStreams
from .matmul_switches import MatmulSwitches
from .registry import backends
from .sim import wrong_device_message

if TYPE_CHECKING:
    from ..devices import Device
    from .streams_base import StreamBackend

INSTALL_HINT = (
    "pip install 'autograd-async[cuda12]' (CUDA 12) or 'autograd-async[cuda13]' (CUDA 13)"
)


# `torch.backends.cuda.matmul.allow_tf32 = True` and friends (see matmul_switches.py).
matmul = MatmulSwitches()


def is_built() -> bool:
    """Whether CuPy, which runs `cuda` devices, is installed (PyTorch: built with CUDA)."""
    return importlib.util.find_spec("cupy") is not None


def load_cupy() -> ModuleType:
    """CuPy, or DeviceError saying how to install it."""
    try:
        import cupy  # noqa: PLC0415 - optional and slow to import: only when a GPU is used
    except ImportError as exc:
        from ..devices import DeviceError  # noqa: PLC0415 - devices imports backends

        message = f"cuda devices need CuPy, which is not installed: {INSTALL_HINT}"
        raise DeviceError(message) from exc
    return cupy


def _in_dtype(draw: Any, shape: tuple, dtype: Any) -> Any:
    """`draw(shape, dtype=...)` in `dtype`: CuPy draws float32 and float64 only, so other
    dtypes are drawn in float32 and cast."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize >= 4:
        return draw(shape, dtype=dtype)
    return draw(shape, dtype=np.float32).astype(dtype)


class CudaBackend(Backend):
    """CuPy on `cuda:N`: entering a device is CuPy's `Device` context; copies between GPUs go
    through a contiguous array on the source GPU (CuPy refuses other layouts)."""

    type = "cuda"
    host_memory = False
    indexing_checks_bounds = False  # CuPy wraps out-of-range indices around
    native_half_matmul = True

    def __init__(self) -> None:
        self._cupy: ModuleType | None = None
        self._streams: StreamBackend | None = None

    # ------------------------------------------------------------------ arrays
    @property
    def xp(self) -> ModuleType:
        if self._cupy is None:
            self._cupy = load_cupy()
        return self._cupy

    def owns(self, array: Any) -> bool:
        return type(array).__module__.startswith("cupy")

    def device_count(self) -> int:
        try:
            return int(self.xp.cuda.runtime.getDeviceCount())
        except Exception:  # noqa: BLE001 - no CuPy, no driver or no GPU: none usable
            return 0

    def check_available(self, device: Device) -> None:
        from ..devices import DeviceError  # noqa: PLC0415

        cupy = self.xp
        try:
            count = int(cupy.cuda.runtime.getDeviceCount())
        except Exception as exc:  # noqa: BLE001
            raise DeviceError(f"device {device} is unavailable: CUDA reports {exc}") from exc
        if device._accelerator_index >= count:
            raise DeviceError(f"device {device} does not exist: {count} CUDA GPU(s) visible")

    def asarray(self, data: Any, device: Device, dtype: Any = None) -> Any:
        cupy = self.xp
        if self.owns(data):
            if data.device.id != device.index:
                from ..devices import move_array  # noqa: PLC0415 - devices imports backends

                data = move_array(data, self.device_of(data), device)  # ordered on both GPUs
        elif not isinstance(data, np.ndarray):
            data = host_values(data)  # another off-host type's array; anything else CuPy takes
        with cupy.cuda.Device(device.index):
            return cupy.asarray(data, dtype=dtype)

    def device_of(self, array: Any) -> Device:
        """The `cuda:N` device holding a CuPy array."""
        from ..devices import Device  # noqa: PLC0415

        return Device("cuda", int(array.device.id))

    def copy_to(self, array: Any, src: Device, dst: Device) -> Any:
        cupy = self.xp
        if not self.owns(array):  # from the host or another device type
            if not isinstance(array, np.ndarray):
                array = backends.for_device(src).to_host(array)
            with cupy.cuda.Device(dst.index):
                return cupy.array(array, copy=True)
        if src is not dst:
            # CuPy copies between GPUs only C- or F-contiguous arrays: make one on the source.
            with cupy.cuda.Device(src.index):
                array = cupy.ascontiguousarray(array)
        with cupy.cuda.Device(dst.index):
            return cupy.array(array, copy=True)

    def to_host(self, array: Any) -> Any:
        return array.get() if self.owns(array) else np.asarray(array)

    def contiguous_on(self, array: Any, device: Device) -> Any:
        if array.flags.c_contiguous or array.flags.f_contiguous:
            return array
        cupy = self.xp
        with cupy.cuda.Device(device.index):
            return cupy.ascontiguousarray(array)

    def scatter_add(self, out: Any, index: Any, values: Any) -> None:
        import cupyx  # noqa: PLC0415 - with CuPy only

        if out.dtype.kind != "c":
            cupyx.scatter_add(out, index, values)
            return
        # cupyx.scatter_add refuses complex dtypes: add the real and imaginary parts apart,
        # through views of `out` that write into it.
        values = self.xp.asarray(values)
        cupyx.scatter_add(out.real, index, values.real)
        if values.dtype.kind == "c":
            cupyx.scatter_add(out.imag, index, values.imag)

    def check_indices(self, index: Any, size: int, dim: int, what: str) -> None:
        if index.size == 0:
            return
        cupy = self.xp
        low, high = (int(v) for v in cupy.stack([index.min(), index.max()]).get())
        if low < -size or high >= size:
            raise out_of_range(low, high, size, dim, what)

    def data_ptr(self, array: Any) -> int:
        return int(array.data.ptr)

    def special(self, name: str) -> Any:
        import cupyx.scipy.special as cupy_special  # noqa: PLC0415 - with CuPy only

        return getattr(cupy_special, name)

    def scipy_linalg(self, name: str) -> Any:
        import cupyx.scipy.linalg as cupy_linalg  # noqa: PLC0415 - with CuPy only

        return getattr(cupy_linalg, name)

    # ---------------------------------------------------- the current device
    def device_context(self, device: Device) -> AbstractContextManager[Any]:
        # CuPy's Device is itself the context (set and restore, skipped when already current),
        # without a generator's cost on every op.
        return self.xp.cuda.Device(device.index)

    def use_device(self, device: Device) -> None:
        self.xp.cuda.Device(device.index).use()

    def current_device_index(self) -> int | None:
        return int(self.xp.cuda.runtime.getDevice())

    def check_current(self, device: Device, op: str) -> None:
        current = int(self.xp.cuda.runtime.getDevice())
        if current != device.index:
            from ..devices import DeviceError  # noqa: PLC0415

            error = DeviceError(wrong_device_message(device._accelerator_index, current))
            error.add_note(f"while running {op} on {device}")
            raise error

    # ------------------------------------------------------- streams & random
    @property
    def streams(self) -> StreamBackend:
        if self._streams is None:
            self._streams = CudaStreams()
        return self._streams

    def random_state(self, device: Device, seed: int | None) -> Any:
        cupy = self.xp
        with cupy.cuda.Device(device.index):
            return cupy.random.RandomState(seed)

    def random_uniform(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.random_sample, shape, dtype)

    def random_normal(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.standard_normal, shape, dtype)

    def random_integers(self, state: Any, low: int, high: int, shape: tuple, dtype: Any) -> Any:
        return state.randint(low, high, size=shape, dtype=np.int64).astype(dtype, copy=False)

    def random_permutation(self, state: Any, n: int, dtype: Any) -> Any:
        return state.permutation(n).astype(dtype, copy=False)

    def random_exponential(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.standard_exponential, shape, dtype)

    def random_cauchy(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.standard_cauchy, shape, dtype)

    def random_geometric(self, state: Any, p: float, shape: tuple, dtype: Any) -> Any:
        return state.geometric(p, shape, dtype=np.int64).astype(dtype, copy=False)

    def random_poisson(self, state: Any, rates: Any, dtype: Any) -> Any:
        return state.poisson(rates, dtype=np.int64).astype(dtype, copy=False)

    def random_gamma(self, state: Any, concentration: Any, dtype: Any) -> Any:
        return state.standard_gamma(concentration, dtype=np.float64).astype(dtype, copy=False)

    def random_binomial(self, state: Any, count: Any, probs: Any, dtype: Any) -> Any:
        shape = np.broadcast_shapes(count.shape, probs.shape)
        draws = state.binomial(count.astype(np.int64), probs, size=shape, dtype=np.int64)
        return draws.astype(dtype, copy=False)
