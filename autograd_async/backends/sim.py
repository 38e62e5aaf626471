"""The `sim` backend: simulated accelerators `sim:N` whose arrays are NumPy arrays.

The worked example of a device type (docs/backends.md): it reuses the cpu backend's array code and
adds what makes a device separate. In the plain sim mode that is only the device count. In the
CUDA-faithful mode (`backends.sim_mode`) it also follows the CUDA rules that break code on real
GPUs, so that tests without a GPU catch those mistakes:

- each thread has a current sim device (0 until entered, as CUDA's current device), entered with
  `device_context`; an op on `sim:1` arrays while `sim:0` is current raises CuPy's error;
- a copy between two sim devices refuses non-contiguous arrays, as CuPy does; its contiguous
  temporary on the source and the copy itself are accesses the stream sanitizer checks, on the
  streams CuPy would run them on (the thread's current stream of the source, then of the target);
- reading index bounds back (`check_indices`) is a host synchronisation, as CuPy's `get()`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from .cpu import CpuBackend
from .registry import backends
from .sanitizer import sanitizer
from .sim_mode import cuda_rules, sim_mode_state
from .sim_streams import SimStreams, sim_world

if TYPE_CHECKING:
    from ..devices import Device
    from .streams_base import StreamBackend

NON_CONTIGUOUS_COPY_MESSAGE = "CuPy cannot copy non-contiguous array between devices."


def wrong_device_message(array_index: int, current_index: int) -> str:
    """CuPy's words for an array used while another device is current (without peer access)."""
    return (
        f"The device where the array resides ({array_index}) is different from the current "
        f"device ({current_index}). Peer access is unavailable between these devices."
    )


class _CurrentDevice(threading.local):
    """A thread's current sim device index: 0 until entered, as CUDA's is."""

    index = 0


class SimBackend(CpuBackend):
    """`sim:N` devices: NumPy arrays, a configurable count, CUDA's rules in "cuda" mode."""

    type = "sim"

    def __init__(self) -> None:
        super().__init__()
        self._current = _CurrentDevice()

    @property
    def indexing_checks_bounds(self) -> bool:  # type: ignore[override]
        """Under CUDA's rules sim takes cuda's path: bounds checked by the library, not NumPy."""
        return not cuda_rules()

    def device_count(self) -> int:
        from ..devices import sim_device_count  # noqa: PLC0415 - devices imports backends

        return sim_device_count()

    def check_available(self, device: Device) -> None:
        from ..devices import SIM_DEVICES_ENV, DeviceError  # noqa: PLC0415

        sim_mode_state.get(mark_used=True)  # the rules are fixed from the first use on
        count = self.device_count()
        if device._accelerator_index >= count:
            raise DeviceError(
                f"device {device} does not exist: {count} sim devices are configured "
                f"(set_sim_device_count() or {SIM_DEVICES_ENV})"
            )

    def copy_to(self, array: Any, src: Device, dst: Device) -> Any:
        if not isinstance(array, np.ndarray):  # from a device of another type
            return backends.for_device(src).to_host(array)
        if src.type != self.type or src is dst or not cuda_rules():
            return array.copy()
        # Between two sim devices, as CuPy copies between GPUs: made contiguous on the source
        # (CuPy refuses other layouts), then copied with the destination current.
        with self.device_context(src):
            contiguous = self.contiguous_on(array, src)
        with self.device_context(dst):
            stream = sim_world.launch_stream(dst)
            sanitizer.access(contiguous, src, stream, False, "a copy between devices")
            out = self.peer_copy(contiguous)
            sanitizer.access(out, dst, stream, True, "a copy between devices")
            return out

    def contiguous_on(self, array: Any, device: Device) -> Any:
        """`array` or a C-contiguous temporary made on `device`'s current stream (under CUDA's
        rules, a kernel the sanitizer sees: a read of `array`, a write of the temporary)."""
        if array.flags.c_contiguous or array.flags.f_contiguous:
            return array
        contiguous = np.ascontiguousarray(array)
        if cuda_rules() and contiguous is not array:
            stream = sim_world.launch_stream(device)
            what = "a contiguous copy for a copy between devices"
            sanitizer.access(array, device, stream, False, what)
            sanitizer.access(contiguous, device, stream, True, what)
        return contiguous

    def peer_copy(self, array: Any) -> Any:
        """Copy to another sim device the way CuPy does: C- or F-contiguous arrays only."""
        if cuda_rules() and not (array.flags.c_contiguous or array.flags.f_contiguous):
            raise NotImplementedError(NON_CONTIGUOUS_COPY_MESSAGE)
        return array.copy(order="K")

    def check_indices(self, index: Any, size: int, dim: int, what: str) -> None:
        if cuda_rules() and index.size:  # CuPy reads the range back: the host waits
            device = self._device(self._current.index)
            sim_world.host_sync(dict(sim_world.launch_stream(device).clock))
        super().check_indices(index, size, dim, what)

    @staticmethod
    def _device(index: int) -> Device:
        from ..devices import Device  # noqa: PLC0415 - devices imports backends

        return Device("sim", index)

    # ---------------------------------------------------- the current device
    @contextmanager
    def device_context(self, device: Device) -> Iterator[None]:
        current = self._current
        previous = current.index
        current.index = device._accelerator_index
        try:
            yield
        finally:
            current.index = previous

    def use_device(self, device: Device) -> None:
        self._current.index = device._accelerator_index

    def current_device_index(self) -> int | None:
        # Asked once per device when its first op decides whether to enter: the rules are
        # fixed from then on, so a device resolved under one mode never runs under the other.
        if sim_mode_state.get(mark_used=True) != "cuda":
            return None
        return self._current.index

    def check_current(self, device: Device, op: str) -> None:
        current = self._current.index
        if current != device.index and cuda_rules():
            from ..devices import DeviceError  # noqa: PLC0415

            error = DeviceError(wrong_device_message(device._accelerator_index, current))
            error.add_note(f"while running {op} on {device} (sim devices follow CUDA's rules)")
            raise error

    # ------------------------------------------------------- streams & random
    @property
    def streams(self) -> StreamBackend:
        if self._streams is None:
            self._streams = SimStreams()
        return self._streams
