"""Which backend serves each device type, and which backend an array belongs to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..devices import Device
    from .base import Backend


class BackendRegistry:
    """Device type -> backend. Types register once, at import of their module."""

    def __init__(self) -> None:
        self._by_type: dict[str, Backend] = {}

    def register(self, backend: Backend) -> None:
        """Serve `backend.type` devices with `backend` (a type registers once only)."""
        if backend.type in self._by_type:
            raise ValueError(f"a backend for device type {backend.type!r} is already registered")
        self._by_type[backend.type] = backend

    def types(self) -> tuple[str, ...]:
        """The device types that have a backend."""
        return tuple(self._by_type)

    def for_type(self, kind: str) -> Backend:
        """The backend of device type `kind`."""
        try:
            return self._by_type[kind]
        except KeyError:
            raise ValueError(
                f"no backend for device type {kind!r}; known: {', '.join(self._by_type)}"
            ) from None

    def for_device(self, device: Device) -> Backend:
        """The backend of `device`."""
        return self.for_type(device.type)

    def of_array(self, array: Any) -> Backend:
        """The backend whose array module made `array` (host NumPy arrays: the cpu backend)."""
        for backend in self._by_type.values():
            if backend.owns(array):
                return backend
        raise TypeError(f"no backend holds arrays of type {type(array).__name__}")


backends = BackendRegistry()
