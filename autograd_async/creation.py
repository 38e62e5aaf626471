"""Making tensors: `tensor`, `zeros`, `ones`, `full`, `arange`, `randn`, `rand`, `empty`, `*_like`."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import devices as _devices
from .batching import random_draw
from .core.tensor import Tensor, as_dtype, infer_array, made
from .devices import CPU, Device
from .dtypes import default_float


class Generator:
    """A seedable source of random numbers (PyTorch's `torch.Generator`).

    Host-memory devices (cpu, sim) draw from one NumPy generator; each device of another type
    (each GPU) gets its own generator on that device, seeded from this one's seed and the
    device's index, so the same seed gives the same values on every device.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._reseed(seed)

    def _reseed(self, seed: int | None) -> None:
        if seed is None:  # unseeded: a fresh seed, still known so that devices derive from it
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)
        self._seed = int(seed)
        self._rng = np.random.default_rng(seed)
        self._device_states: dict[Device, Any] = {}

    def manual_seed(self, seed: int) -> Generator:
        """Reseed (every device's generator too); returns self."""
        self._reseed(seed)
        return self

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    @property
    def rng(self) -> np.random.Generator:
        """The NumPy generator behind it (host-memory devices)."""
        return self._rng

    def state_for(self, dev: Device) -> tuple[Any, Any]:
        """(backend, generator) that draws numbers on `dev`."""
        backend = _devices.backend_for(dev)
        if backend.host_memory:
            return backend, self._rng
        state = self._device_states.get(dev)
        if state is None:
            seed = np.random.SeedSequence((self._seed, dev.index or 0)).generate_state(1)[0]
            with _devices.on_device(dev):
                state = self._device_states.setdefault(dev, backend.random_state(dev, int(seed)))
        return backend, state

    def get_state(self) -> dict:
        """A snapshot of the generator's state, for `set_state` (a dict, not a byte tensor)."""
        return copy.deepcopy(dict(self._rng.bit_generator.state))

    def set_state(self, state: dict) -> Generator:
        """Restore a state taken by `get_state`; returns self."""
        self._rng.bit_generator.state = copy.deepcopy(state)
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator."""
    return default_generator.manual_seed(seed)


class DefaultDevice:
    """The device factories make tensors on when given none (`set_default_device`): one
    setting for the process, as PyTorch's, like the default dtype."""

    __slots__ = ("device",)

    def __init__(self) -> None:
        self.device: Device = CPU


default_device = DefaultDevice()


def _device(device: Any) -> Device:
    dev = default_device.device if device is None else Device(device)
    _devices.check_available(dev)
    return dev


def _shape(size: tuple, keyword: Any = None) -> tuple[int, ...]:
    """The shape from sizes given positionally, as one sequence, or as PyTorch's `size=`."""
    if keyword is not None:
        if size:
            raise TypeError("got the size both positionally and as size=")
        size = (keyword,) if isinstance(keyword, (int, np.integer)) else tuple(keyword)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for position, n in enumerate(size):
        if not isinstance(n, (int, np.integer)):
            raise TypeError(
                f"argument 'size' must be tuple of ints, but found element of type "
                f"{type(n).__name__} at pos {position}"
            )
    if any(n < 0 for n in size):  # PyTorch's type and words
        bad = next(n for n in size if n < 0)
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {bad}: {[int(n) for n in size]}"
        )
    return tuple(int(n) for n in size)


# A random draw: (backend, its generator's state, shape) -> an array of that shape on the device.
Sampler = Callable[[Any, Any, tuple], Any]


def _drawn(
    what: str,
    sample: Sampler,
    generator: Generator | None,
    shape: tuple,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    """Random values drawn on the device itself by its backend's generator (`what` names the
    draw); `sample` may be asked for a larger shape, with vmap's batch dimensions first."""
    dev = _device(device)

    def drawn(shape: tuple) -> Tensor:
        backend, state = (generator or default_generator).state_for(dev)
        with _devices.launching(dev, what):
            array = sample(backend, state, shape)
        t = made(Tensor._wrap(backend.asarray(array, dev) if backend.host_memory else array, dev))
        if requires_grad:
            t.requires_grad_(True)
        return t

    return random_draw(drawn, shape)  # under vmap, its randomness mode decides the shape


def _make(array: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    dev = _device(device)
    t = made(Tensor._wrap(_devices.asarray_on(array, dev) if dev is not CPU else array, dev))
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor (a copy) from data: Python floats give float32, float64 arrays stay float64."""
    dev = _device(device)
    array = infer_array(data, dtype, dev)
    if isinstance(data, (np.ndarray, Tensor)) or _devices.is_device_array(data):
        array = array.copy()
    t = made(Tensor._wrap(array, dev))
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor sharing memory with `data` when possible: a Tensor, a NumPy or CuPy array, or any
    DLPack producer (a PyTorch tensor) already of that dtype and device is not copied."""
    if isinstance(data, Tensor):  # as PyTorch: `to`, so the result stays in the graph
        return data.to(device=device, dtype=dtype)
    if _is_foreign_dlpack(data):
        return from_dlpack(data).to(device=device, dtype=dtype)
    dev = _device(device)
    return made(Tensor._wrap(infer_array(data, dtype, dev), dev))


def _is_foreign_dlpack(data: Any) -> bool:
    """True for DLPack producers other than NumPy and CuPy arrays (e.g. PyTorch tensors)."""
    return (
        hasattr(data, "__dlpack__")
        and not isinstance(data, (np.ndarray, np.generic))
        and not _devices.is_device_array(data)
    )


def from_numpy(array: np.ndarray) -> Tensor:
    """A cpu tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return made(Tensor._wrap(array, CPU))


def _filled(fill: Any, size: tuple, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    dtype = as_dtype(dtype) or default_float()
    return _make(np.full(size, fill, dtype=dtype), device, requires_grad)


def zeros(
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of zeros."""
    return _filled(0, _shape(sizes, size), dtype, device, requires_grad)


def ones(
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ones."""
    return _filled(1, _shape(sizes, size), dtype, device, requires_grad)


def empty(
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """An uninitialised tensor."""
    dtype = as_dtype(dtype) or default_float()
    return _make(np.empty(_shape(sizes, size), dtype=dtype), device, requires_grad)


def full(
    size: Any, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor filled with `fill_value` (dtype inferred from it, as PyTorch does)."""
    if dtype is None:
        dtype = infer_array(fill_value, None, CPU).dtype
    shape = _shape((size,) if isinstance(size, int) else tuple(size))
    return _filled(fill_value, shape, dtype, device, requires_grad)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Evenly spaced values in [start, end)."""
    if end is None:
        start, end = 0, start
    np_dtype = as_dtype(dtype)
    if np_dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        np_dtype = np.dtype(np.int64) if is_int else default_float()
    if np_dtype.kind == "b":
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    return _make(np.arange(start, end, step, dtype=np_dtype), device, requires_grad)


def randn(
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Standard normal samples."""
    dtype = as_dtype(dtype) or default_float()
    return _drawn(
        "random_normal",
        lambda backend, state, shape: backend.random_normal(state, shape, dtype),
        generator,
        _shape(sizes, size),
        device,
        requires_grad,
    )


def rand(
    *sizes: Any,
    size: Any = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform samples in [0, 1)."""
    dtype = as_dtype(dtype) or default_float()
    return _drawn(
        "random_uniform",
        lambda backend, state, shape: backend.random_uniform(state, shape, dtype),
        generator,
        _shape(sizes, size),
        device,
        requires_grad,
    )


def _like_input(name: str, input: Any) -> None:
    # PyTorch's words: without the check a list fails later on a missing `.shape`.
    if not isinstance(input, Tensor):
        raise TypeError(
            f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )


def _like(maker: Any, t: Tensor, dtype: Any, device: Any, requires_grad: bool, *extra: Any):
    _like_input(f"{maker.__name__}_like", t)
    return maker(
        *t.shape,
        *extra,
        dtype=dtype or t.dtype,
        device=device or t.device,
        requires_grad=requires_grad,
    )


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Zeros shaped like `input`."""
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Ones shaped like `input`."""
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Uninitialised, shaped like `input`."""
    return _like(empty, input, dtype, device, requires_grad)


def rand_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Uniform samples shaped like `input`."""
    return _like(rand, input, dtype, device, requires_grad)


def randn_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False):
    """Normal samples shaped like `input`."""
    return _like(randn, input, dtype, device, requires_grad)


def full_like(
    input: Tensor,
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """`fill_value` shaped like `input`."""
    _like_input("full_like", input)
    return full(
        input.shape,
        fill_value,
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )


# ------------------------------------------------------- ranges, matrices, random integers
def linspace(
    start: Any,
    end: Any,
    steps: int,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included (float32 by default)."""
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    dtype = as_dtype(dtype) or default_float()
    if dtype.kind == "b":
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    values = np.linspace(float(start), float(end), int(steps), dtype=np.float64)
    if dtype.kind in "iu":
        values = np.trunc(values)  # PyTorch truncates toward zero for integer dtypes
    return _make(values.astype(dtype), device, requires_grad)


def logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """`base ** linspace(start, end, steps)` (float32 by default)."""
    if steps < 0:
        raise RuntimeError("logspace: number of steps must be non-negative")
    dtype = as_dtype(dtype) or default_float()
    if dtype.kind == "b":
        raise NotImplementedError("\"logspace_cpu\" not implemented for 'Bool'")
    exponents = np.linspace(float(start), float(end), int(steps), dtype=np.float64)
    return _make((float(base) ** exponents).astype(dtype), device, requires_grad)


def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """An `n` x `m` matrix (square without `m`) with ones on the diagonal."""
    if n < 0:
        raise RuntimeError(f"eye: n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"eye: m must be greater or equal to 0, got {m}")
    dtype = as_dtype(dtype) or default_float()
    return _make(np.eye(n, m, dtype=dtype), device, requires_grad)


def randint(
    *args: Any,
    low: int | None = None,
    high: int | None = None,
    size: Any = None,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers drawn uniformly from [low, high): `randint(high, size)`, `randint(low, high,
    size)` or with keywords (int64 by default)."""
    given = list(args)
    if size is None and given:
        size = given.pop()
    if high is None and given:
        high = given.pop()
    if low is None and given:
        low = given.pop()
    if given or high is None or size is None:
        raise TypeError(
            "randint() takes (high, size) or (low, high, size), positionally or as keywords; "
            f"got {len(args)} positional arguments"
        )
    low = 0 if low is None else low
    if low >= high:
        raise RuntimeError(
            f"randint: random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    dtype = as_dtype(dtype) or np.dtype(np.int64)
    shape = _shape((size,) if isinstance(size, int) else tuple(size))
    start, stop = int(low), int(high)
    return _drawn(
        "random_integers",
        lambda backend, state, shape: backend.random_integers(state, start, stop, shape, dtype),
        generator,
        shape,
        device,
        requires_grad,
    )


def randperm(
    n: int,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of 0..n-1 (int64 by default)."""
    if n < 0:
        raise RuntimeError(f"randperm: Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = as_dtype(dtype) or np.dtype(np.int64)
    return _drawn(
        "random_permutation",
        lambda backend, state, shape: _permutations(backend, state, shape, dtype),
        generator,
        (int(n),),
        device,
        requires_grad,
    )


def _permutations(backend: Any, state: Any, shape: tuple, dtype: Any) -> Any:
    """Permutations of 0..n-1 along the last dimension of `shape`: one for a plain `randperm`,
    one per leading index under vmap with randomness="different" (its batch dimensions)."""
    *batch, n = shape
    if not batch:
        return backend.random_permutation(state, n, dtype)
    rows = [backend.random_permutation(state, n, dtype) for _ in range(math.prod(batch))]
    xp = backend.xp
    return (xp.stack(rows) if rows else xp.empty((0, n), dtype)).reshape(shape)


def is_tensor(obj: Any) -> bool:
    """True when `obj` is a Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of `input`."""
    _like_input("numel", input)
    return input.numel()


# -------------------------------------------------------------------- interop
_DLPACK_CPU, _DLPACK_CUDA = 1, 2


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with any DLPack producer (a NumPy array, a PyTorch or CuPy tensor)
    on the cpu or a CUDA GPU: no copy, and writes through either side are seen by the other."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack_device__"):
        raise TypeError(
            f"from_dlpack expects an object with __dlpack__ and __dlpack_device__, got "
            f"{type(ext_tensor).__name__}"
        )
    kind, index = ext_tensor.__dlpack_device__()
    if kind == _DLPACK_CPU:
        return Tensor._wrap(np.from_dlpack(ext_tensor), CPU)
    if kind == _DLPACK_CUDA:
        dev = _device(f"cuda:{index}")
        with _devices.on_device(dev):
            return Tensor._wrap(_devices.array_module(dev).from_dlpack(ext_tensor), dev)
    raise BufferError(f"from_dlpack: unsupported DLPack device type {kind} (index {index})")
