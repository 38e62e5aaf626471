"""Devices: `Device` parsing, the sim device count, and the functions that ask each device's
backend (`backends/`: NumPy for `cpu` and `sim:N`, CuPy, lazily, for `cuda:N`) for its arrays and
its current device (`launching`, `each_on_its_device`, `enters_device`).

A `sim:N` device is a simulated accelerator: its arrays are NumPy arrays, but the library treats it
as a separate device (its own worker thread, no silent mixing with `cpu` or another `sim`), so
multi-device programs run and are tested without a GPU.
"""

from __future__ import annotations

import enum
import functools
import gc
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from types import ModuleType
from typing import Any, Final, Literal

import numpy as np

SIM_DEVICES_ENV = "AUTOGRAD_ASYNC_SIM_DEVICES"
DEFAULT_SIM_DEVICES = 2


class _Unresolved(enum.Enum):
    """The type of `_UNRESOLVED`, so that testing a device's `_entry` for it narrows the type."""

    TOKEN = "unresolved"


# A device's `_entry` before `current_entry()` has asked its backend.
_UNRESOLVED: Final = _Unresolved.TOKEN


class DeviceError(ValueError):
    """A malformed device string, an unavailable device, or tensors on different devices."""


class Device:
    """A device: `cpu`, `cuda:N` or `sim:N`. Instances are interned, so `is` and `==` agree."""

    __slots__ = ("type", "index", "_str", "_counted", "_entry", "__weakref__")
    _interned: dict[tuple[str, int | None], Device] = {}
    _intern_lock = threading.Lock()

    type: str
    index: int | None
    _str: str
    _counted: bool
    _entry: Backend | None | Literal[_Unresolved.TOKEN]

    def __new__(cls, spec: str | Device, index: int | None = None) -> Device:
        if isinstance(spec, Device):
            return spec
        kind, idx = _parse(spec, index)
        key = (kind, idx)
        found = cls._interned.get(key)
        if found is not None:
            return found
        with cls._intern_lock:
            found = cls._interned.get(key)
            if found is None:
                found = object.__new__(cls)
                found.type = kind
                found.index = idx
                found._str = kind if idx is None else f"{kind}:{idx}"
                # Whether its users are counted, so the device count never strands them (sim).
                found._counted = kind == "sim"
                found._entry = _UNRESOLVED  # see current_entry()
                cls._interned[key] = found
        return found

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                return Device(other) is self
            except DeviceError:
                return False
        return other is self

    def __hash__(self) -> int:
        return hash(self._str)

    def __reduce__(self):
        return (Device, (self._str,))

    @property
    def is_accelerator(self) -> bool:
        """True for `cuda` and `sim` devices."""
        return self.type != "cpu"

    @property
    def _accelerator_index(self) -> int:
        """N of `cuda:N` or `sim:N`, for code that serves only indexed devices (their backends);
        the cpu, which has no index, raises."""
        index = self.index
        if index is None:
            raise DeviceError(f"device {self} has no index: expected an accelerator")
        return index


def _parse(spec: str, index: int | None) -> tuple[str, int | None]:
    if not isinstance(spec, str):
        raise DeviceError(f"a device is a string like 'cpu', 'sim:0' or 'cuda:0', not {spec!r}")
    text = spec.strip().lower()
    kind, sep, rest = text.partition(":")
    if sep:
        if index is not None:
            raise DeviceError(f"device {spec!r} already has an index; got index={index} as well")
        if not rest.isdigit():
            raise DeviceError(f"malformed device {spec!r}: the index after ':' must be a number")
        index = int(rest)
    if kind == "cpu":
        if index not in (None, 0):
            raise DeviceError(f"there is one cpu device; got {spec!r}")
        return "cpu", None
    if kind in backends.types():  # every registered type other than the one cpu is indexed
        if index is None:
            index = 0
        if index < 0:
            raise DeviceError(f"device index must be >= 0, got {index}")
        return kind, index
    raise DeviceError(
        f"unknown device type {kind!r} in {spec!r}; expected 'cpu', 'cuda:N' or 'sim:N'"
        + "".join(f", '{k}:N'" for k in backends.types() if k not in ("cpu", "cuda", "sim"))
    )


def device(spec: str | Device, index: int | None = None) -> Device:
    """Return the Device for `spec` ('cpu', 'sim:1', 'cuda:0' or a Device)."""
    return Device(spec, index)


CPU = Device("cpu")


class SimConfig:
    """How many `sim` devices exist, and what lives on each (so the count never strands it).

    The count is read from the environment once and changeable through the API. Tensors and
    device workers on a sim device note themselves here, weakly, so that lowering the count below
    a device still in use is refused up front instead of failing later inside a backward.
    """

    def __init__(self) -> None:
        raw = os.environ.get(SIM_DEVICES_ENV)
        count = DEFAULT_SIM_DEVICES
        if raw:
            if not raw.strip().isdigit():
                raise DeviceError(f"{SIM_DEVICES_ENV} must be a whole number, got {raw!r}")
            count = int(raw)
        self.count = count
        self._users: dict[int, weakref.WeakSet] = {}
        self._lock = threading.Lock()

    def note_user(self, index: int, user: Any) -> None:
        """Record that `user` (a tensor, a worker) lives on sim:`index` for as long as it exists."""
        with self._lock:
            users = self._users.get(index)
            if users is None:
                users = self._users[index] = weakref.WeakSet()
            users.add(user)

    def forget_user(self, index: int, user: Any) -> None:
        """`user` no longer holds sim:`index` (e.g. a worker whose thread has ended)."""
        with self._lock:
            users = self._users.get(index)
            if users is not None:
                users.discard(user)

    def users_from(self, first: int) -> dict[int, list]:
        """What still lives on sim devices numbered `first` and above, by index."""
        with self._lock:
            return {
                index: list(users)
                for index, users in sorted(self._users.items())
                if index >= first and users
            }

    def set_count(self, count: int) -> None:
        """Change the count, refusing to drop a device that a tensor or worker still uses."""
        if count < self.count:
            stranded = self.users_from(count)
            if stranded:
                gc.collect()  # graphs hold tensors in reference cycles; free the dead ones first
                stranded = self.users_from(count)
            if stranded:
                index, users = next(iter(stranded.items()))
                raise DeviceError(
                    f"cannot lower the sim device count to {count}: sim:{index} is still in use "
                    f"by {_describe_users(users)}; free those first (drop the tensors, or shut "
                    "the autograd engine down to stop its worker)"
                )
        self.count = count


def _describe_users(users: list) -> str:
    """'3 Tensor(s) and the worker thread autograd-async:sim:1' (workers named by their thread)."""
    counts: dict[str, int] = {}
    named: list[str] = []
    for user in users:
        thread = getattr(user, "thread", None)
        if thread is not None:
            named.append(f"the worker thread {thread.name}")
        else:
            kind = type(user).__name__
            counts[kind] = counts.get(kind, 0) + 1
    parts = [f"{n} live {kind}(s)" for kind, n in counts.items()] + named
    return " and ".join(parts)


_sim_config = SimConfig()


def set_sim_device_count(count: int) -> None:
    """Set how many `sim:N` devices exist (default 2, or AUTOGRAD_ASYNC_SIM_DEVICES).

    Lowering the count below a device that a live tensor or a running worker still uses raises
    DeviceError naming that device.
    """
    if not isinstance(count, int) or count < 0:
        raise DeviceError(f"sim device count must be a non-negative int, got {count!r}")
    _sim_config.set_count(count)


def sim_device_count() -> int:
    """How many `sim:N` devices exist."""
    return _sim_config.count


def note_sim_user(dev: Device, user: Any) -> None:
    """Record that `user` lives on the sim device `dev` while it exists (see SimConfig)."""
    _sim_config.note_user(dev._accelerator_index, user)


def forget_sim_user(dev: Device, user: Any) -> None:
    """`user` has let go of the sim device `dev` before being garbage collected."""
    _sim_config.forget_user(dev._accelerator_index, user)


def backend_for(dev: Device) -> Backend:
    """The backend that serves `dev`'s type."""
    return backends.for_type(dev.type)


def backend_of(array: Any) -> Backend:
    """The backend whose array module made `array`."""
    return backends.of_array(array)


def on_device(dev: Device) -> AbstractContextManager:
    """Make `dev` the current device of this thread for a block (CUDA's rule; a no-op where the
    type has none). Every entry point that launches work on a device's arrays enters it."""
    return backend_for(dev).device_context(dev)


def check_current(dev: Device, what: str) -> None:
    """Raise the device's own error when `dev` is not this thread's current device."""
    backend_for(dev).check_current(dev, what)


def check_entered(dev: Device, what: str) -> None:
    """Where `dev`'s type has a current-device rule, raise its error unless `dev` is current
    (a thread that runs `dev`'s work, such as its worker, must have entered it)."""
    backend = current_entry(dev)
    if backend is not None:
        backend.check_current(dev, what)


class _Launch:
    """Enter a device, then check that it is current: the check is what fails (with the
    device's own error) when an entry point's entering has gone missing."""

    __slots__ = ("_backend", "_device", "_what", "_context")

    def __init__(self, backend: Backend, device: Device, what: str) -> None:
        self._backend, self._device, self._what = backend, device, what

    def __enter__(self) -> None:
        self._context = self._backend.device_context(self._device)
        self._context.__enter__()
        try:
            self._backend.check_current(self._device, self._what)
        except BaseException:
            self._context.__exit__(None, None, None)  # leave the thread as it was
            raise

    def __exit__(self, *exc: Any) -> Any:
        return self._context.__exit__(*exc)


_NOTHING_TO_ENTER = nullcontext()


def launching(dev: Device, what: str) -> AbstractContextManager:
    """The context of a block that launches `what` on `dev`'s arrays: `dev` entered and checked
    current where its type has that rule, nothing (a shared null context) elsewhere."""
    backend = current_entry(dev)
    if backend is None:
        return _NOTHING_TO_ENTER
    return _Launch(backend, dev, what)


def each_on_its_device(tensors: Iterable[Any], what: str) -> Iterator[Any]:
    """Yield each tensor with its device entered while the loop body runs for it (an optimizer
    step or a gradient clip over parameters that may live on several devices)."""
    for tensor in tensors:
        dev = tensor.device
        if dev._entry is None:
            yield tensor
        else:
            with launching(dev, what):
                yield tensor


def enters_device(fn: Callable) -> Callable:
    """Run `fn(tensor, ...)` on its first argument's device (for entry points that launch work
    on raw arrays outside `Op.apply`: in-place ops, argmax, comparisons)."""

    @functools.wraps(fn)
    def on_its_device(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        dev = getattr(tensor, "device", None)
        if dev is None or dev._entry is None:
            return fn(tensor, *args, **kwargs)
        with launching(dev, fn.__name__):
            return fn(tensor, *args, **kwargs)

    return on_its_device


def current_entry(dev: Device) -> Backend | None:
    """The backend to enter around work on `dev`, or None where its type has no current-device
    rule (cpu, plain sim): resolved once per device, then read from a slot by `Op.apply`."""
    entry = dev._entry
    if entry is _UNRESOLVED:
        backend = backend_for(dev)
        entry = dev._entry = backend if backend.current_device_index() is not None else None
    return entry


def cuda_device_count() -> int:
    """How many CUDA GPUs CuPy sees (0 without CuPy or a driver)."""
    return backends.for_type("cuda").device_count()


def cuda_is_available() -> bool:
    """True when CuPy is installed and at least one GPU is visible."""
    return cuda_device_count() > 0


def check_available(dev: Device) -> None:
    """Raise DeviceError naming what is missing when `dev` cannot be used here."""
    backend_for(dev).check_available(dev)


def array_module(dev: Device) -> ModuleType:
    """The array module (numpy or cupy) that holds arrays on `dev`."""
    return backend_for(dev).xp


def is_device_array(array: Any) -> bool:
    """True when `array` is an array of a backend whose memory is not the host's."""
    return not isinstance(array, np.ndarray) and _device_array(array)


def _device_array(array: Any) -> bool:
    for kind in backends.types():
        backend = backends.for_type(kind)
        if not backend.host_memory and backend.owns(array):
            return True
    return False


def to_host(array: Any) -> np.ndarray:
    """A NumPy array with the values of `array` (itself when it already is one)."""
    if isinstance(array, np.ndarray):
        return array
    return backend_of(array).to_host(array)


def asarray_on(data: Any, dev: Device, dtype: Any = None) -> Any:
    """Make an array on `dev` from `data` (copying only when needed)."""
    return backend_for(dev).asarray(data, dev, dtype)


def move_array(array: Any, src: Device, dst: Device) -> Any:
    """Copy `array` (any layout) from device `src` to `dst`; always a copy.

    Between two devices with streams, ordered as PyTorch orders such a copy: a contiguous
    temporary is made on the source's current stream first, the destination's current stream
    waits for the source's, copies there, and the source's stream then waits for the copy, so
    that neither side reads unfinished data or reuses memory under it.
    """
    backend = backend_for(dst)
    if src is dst or src.type != dst.type or src.type == "cpu" or backend.streams.trivial:
        return backend.copy_to(array, src, dst)
    streams = backend.streams
    source, target = _current_stream(streams, src), _current_stream(streams, dst)
    with backend.device_context(src):
        contiguous = backend.contiguous_on(array, src)
        before = streams.new_event()
        streams.record(before, source)
    streams.wait_event(target, before)
    out = backend.copy_to(contiguous, src, dst)
    after = streams.new_event()
    streams.record(after, target)
    streams.wait_event(source, after)
    return out


def _current_stream(streams: Any, device: Device) -> Any:
    found = override_for(device)
    return found if found is not None else streams.default_stream(device)


def data_ptr(array: Any) -> int:
    """The address of an array's first element (NumPy or CuPy)."""
    if isinstance(array, np.ndarray):
        return int(array.__array_interface__["data"][0])
    return backend_of(array).data_ptr(array)


# Last: the backends import this module's DeviceError and Device.
from .backends import Backend, backends  # noqa: E402
from .backends.stream_context import override_for  # noqa: E402
