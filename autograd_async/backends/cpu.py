"""The `cpu` backend: NumPy arrays in host memory, one device, no current-device rule."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import Backend
from .cpu_streams import CpuStreams
from .registry import backends

if TYPE_CHECKING:
    from ..devices import Device
    from .streams_base import StreamBackend

# NumPy draws these float dtypes directly; others are drawn in float64 and cast.
_DRAWN_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def out_of_range(low: int, high: int, size: int, dim: int, what: str) -> IndexError:
    """PyTorch's error for an index outside [-size, size), naming the op."""
    bad = low if low < -size else high
    return IndexError(f"{what}: index {bad} is out of bounds for dimension {dim} with size {size}")


def host_values(data: Any) -> Any:
    """`data` downloaded when it is an array of a backend off the host; otherwise itself."""
    for kind in backends.types():
        backend = backends.for_type(kind)
        if not backend.host_memory and backend.owns(data):
            return backend.to_host(data)
    return data


def _in_dtype(draw: Any, shape: tuple, dtype: Any) -> Any:
    """`draw(shape)` in `dtype`: NumPy's generator draws float32 and float64 directly, other
    dtypes are drawn in float64 and cast."""
    dtype = np.dtype(dtype)
    if dtype in _DRAWN_FLOATS:
        return draw(shape, dtype=dtype)
    return draw(shape).astype(dtype)


class CpuBackend(Backend):
    """NumPy on the host. Also the base of `sim`, whose arrays are NumPy arrays too."""

    type = "cpu"
    host_memory = True
    #: NumPy raises IndexError for out-of-range fancy indices by itself (CuPy wraps them).
    indexing_checks_bounds = True

    def __init__(self) -> None:
        self._streams: StreamBackend | None = None

    # ------------------------------------------------------------------ arrays
    @property
    def xp(self) -> ModuleType:
        return np

    def owns(self, array: Any) -> bool:
        return isinstance(array, (np.ndarray, np.generic))

    def device_count(self) -> int:
        return 1

    def check_available(self, device: Device) -> None:
        """The cpu is always there."""

    def asarray(self, data: Any, device: Device, dtype: Any = None) -> Any:
        if not isinstance(data, np.ndarray):
            data = host_values(data)
        return np.asarray(data, dtype=dtype)

    def copy_to(self, array: Any, src: Device, dst: Device) -> Any:
        if isinstance(array, np.ndarray):
            return array.copy()
        return backends.for_device(src).to_host(array)  # a device array: its download is a copy

    def to_host(self, array: Any) -> Any:
        return np.asarray(array)

    def scatter_add(self, out: Any, index: Any, values: Any) -> None:
        np.add.at(out, index, values)

    def check_indices(self, index: Any, size: int, dim: int, what: str) -> None:
        if index.size == 0:
            return
        low, high = int(index.min()), int(index.max())
        if low < -size or high >= size:
            raise out_of_range(low, high, size, dim, what)

    def data_ptr(self, array: Any) -> int:
        return int(array.__array_interface__["data"][0])

    def special(self, name: str) -> Any:
        """The scipy.special function `name` for this type's arrays."""
        import scipy.special  # noqa: PLC0415 - only the ops that need it pay its import

        return getattr(scipy.special, name)

    def scipy_linalg(self, name: str) -> Any:
        """The scipy.linalg function `name` for this type's arrays."""
        import scipy.linalg  # noqa: PLC0415 - only the ops that need it pay its import

        return getattr(scipy.linalg, name)

    # ------------------------------------------------------- streams & random
    @property
    def streams(self) -> StreamBackend:
        if self._streams is None:
            self._streams = CpuStreams()
        return self._streams

    def random_state(self, device: Device, seed: int | None) -> Any:
        return np.random.default_rng(seed)

    def random_uniform(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.random, shape, dtype)

    def random_normal(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.standard_normal, shape, dtype)

    def random_integers(self, state: Any, low: int, high: int, shape: tuple, dtype: Any) -> Any:
        # The closed form [low, high - 1] draws the same values and reaches high = 2**63.
        return state.integers(low, high - 1, size=shape, endpoint=True).astype(dtype, copy=False)

    def random_permutation(self, state: Any, n: int, dtype: Any) -> Any:
        return state.permutation(n).astype(dtype, copy=False)

    def random_exponential(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return _in_dtype(state.standard_exponential, shape, dtype)

    def random_cauchy(self, state: Any, shape: tuple, dtype: Any) -> Any:
        return state.standard_cauchy(shape).astype(dtype, copy=False)

    def random_geometric(self, state: Any, p: float, shape: tuple, dtype: Any) -> Any:
        return state.geometric(p, shape).astype(dtype, copy=False)

    def random_poisson(self, state: Any, rates: Any, dtype: Any) -> Any:
        return state.poisson(rates).astype(dtype, copy=False)

    def random_gamma(self, state: Any, concentration: Any, dtype: Any) -> Any:
        return state.standard_gamma(concentration).astype(dtype, copy=False)

    def random_binomial(self, state: Any, count: Any, probs: Any, dtype: Any) -> Any:
        return state.binomial(count.astype(np.int64), probs).astype(dtype, copy=False)
