"""The interface every device type implements: one `Backend` per device type (`cpu`, `sim`, `cuda`).

Everything the library decides per device goes through a backend found in the registry
(`backends.registry`): which array module holds the arrays, whether an array belongs to it,
creating arrays on a device, copying between devices, scatter-add and index-put, index bounds, the
thread's current device, streams and events, timing and random generators. Ops, the engine, nn,
optim, the profiler and the distributed layer never test `device.type` themselves.

Adding a device type is one module that subclasses `Backend` (and `StreamBackend` for its streams)
plus one `registry.register(...)` line; `backends/sim.py` is the worked example (see
docs/backends.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..devices import Device
    from .streams_base import StreamBackend


class Backend(ABC):
    """What the library needs from one device type. One instance per type, shared by its devices."""

    #: The device type this backend serves: "cpu", "sim", "cuda", ...
    type: str
    #: Whether arrays of this type are host (NumPy) memory the CPU can read directly.
    host_memory: bool = True
    #: Whether the array module raises IndexError for out-of-range integer indices by itself
    #: (NumPy does; CuPy wraps them around), so that `check_indices` need not run first.
    indexing_checks_bounds: bool = True
    #: Whether float16/bfloat16 matrix products run natively (cuBLAS); NumPy's are slow loops,
    #: so autocast computes those in float32 and rounds (see ops.autocast_policy).
    native_half_matmul: bool = False

    # ------------------------------------------------------------------ arrays
    @property
    @abstractmethod
    def xp(self) -> ModuleType:
        """The array module (numpy, cupy) whose arrays live on this type's devices."""

    @abstractmethod
    def owns(self, array: Any) -> bool:
        """True when `array` is an array of this backend's array module."""

    @abstractmethod
    def device_count(self) -> int:
        """How many devices of this type exist (0 when the type is unusable here)."""

    @abstractmethod
    def check_available(self, device: Device) -> None:
        """Raise DeviceError naming what is missing when `device` cannot be used here."""

    @abstractmethod
    def asarray(self, data: Any, device: Device, dtype: Any = None) -> Any:
        """An array on `device` from `data` (host data, or an array of any backend)."""

    @abstractmethod
    def copy_to(self, array: Any, src: Device, dst: Device) -> Any:
        """A copy of `array` (on `src`, any layout, contiguous or not) on `dst` of this type."""

    def contiguous_on(self, array: Any, device: Device) -> Any:
        """`array`, or a contiguous copy made on `device`'s current stream when a copy to
        another device needs one (host memory copies any layout)."""
        del device
        return array

    @abstractmethod
    def to_host(self, array: Any) -> Any:
        """A NumPy array with the values of `array` (no copy when it already is one)."""

    @abstractmethod
    def scatter_add(self, out: Any, index: Any, values: Any) -> None:
        """`out[index] += values` with repeated indices accumulating (any dtype, complex too)."""

    @abstractmethod
    def check_indices(self, index: Any, size: int, dim: int, what: str) -> None:
        """Raise IndexError when an integer index array has entries outside [-size, size)."""

    @abstractmethod
    def data_ptr(self, array: Any) -> int:
        """The address of the array's first element."""

    def special(self, name: str) -> Any:
        """The scipy.special function `name` (erf, erfinv, ...) for this type's arrays."""
        raise NotImplementedError(f"{self.type} devices have no special function {name!r}")

    def scipy_linalg(self, name: str) -> Any:
        """The scipy.linalg function `name` (expm, lu, ...) for this type's arrays."""
        raise NotImplementedError(f"{self.type} devices have no linalg function {name!r}")

    # ---------------------------------------------------- the current device
    def device_context(self, device: Device) -> AbstractContextManager[Any]:
        """Make `device` the current device of this thread for the block (CUDA's rule)."""
        return nullcontext()

    def use_device(self, device: Device) -> None:
        """Make `device` current on this thread for good (a worker thread, at its start)."""
        return None

    def current_device_index(self) -> int | None:
        """This thread's current device index for this type (None where there is no such rule)."""
        return None

    def check_current(self, device: Device, op: str) -> None:
        """Raise the error the real device raises when `op` runs on `device` while another
        device of this type is current (a no-op where the type has no such rule)."""
        return None

    # ------------------------------------------------------- streams & random
    @property
    @abstractmethod
    def streams(self) -> StreamBackend:
        """This type's streams and events (see streams_base.StreamBackend)."""

    @abstractmethod
    def random_state(self, device: Device, seed: int | None) -> Any:
        """A random generator for `device` seeded with `seed` (a fresh one when None)."""

    # Draws from a generator made by `random_state`, as arrays on the generator's device.
    def random_uniform(self, state: Any, shape: tuple, dtype: Any) -> Any:
        """Uniform samples in [0, 1)."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_normal(self, state: Any, shape: tuple, dtype: Any) -> Any:
        """Standard normal samples."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_integers(self, state: Any, low: int, high: int, shape: tuple, dtype: Any) -> Any:
        """Integers drawn uniformly from [low, high)."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_permutation(self, state: Any, n: int, dtype: Any) -> Any:
        """A random permutation of 0..n-1."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_exponential(self, state: Any, shape: tuple, dtype: Any) -> Any:
        """Exponential samples with rate 1."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_cauchy(self, state: Any, shape: tuple, dtype: Any) -> Any:
        """Standard Cauchy samples (median 0, scale 1)."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_geometric(self, state: Any, p: float, shape: tuple, dtype: Any) -> Any:
        """The number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_poisson(self, state: Any, rates: Any, dtype: Any) -> Any:
        """Poisson samples, one for each rate of the array `rates` (on this device)."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_gamma(self, state: Any, concentration: Any, dtype: Any) -> Any:
        """Gamma(concentration, rate 1) samples, one for each element of `concentration`."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")

    def random_binomial(self, state: Any, count: Any, probs: Any, dtype: Any) -> Any:
        """Binomial samples of the (broadcast) arrays of trial counts and probabilities."""
        raise NotImplementedError(f"{self.type} devices draw no random numbers")
