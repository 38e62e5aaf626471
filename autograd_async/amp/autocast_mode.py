"""`autocast`: a region where ops run in a lower precision by PyTorch's op lists (see
`ops.autocast_policy`), per device type, nested, and scoped to the thread or asyncio task."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..autocast_state import DEFAULT_DTYPES, AutocastState, autocast_dtype, autocast_state
from ..dtypes import BFLOAT16, of

F = TypeVar("F", bound=Callable[..., Any])
_SUPPORTED = {
    "cpu": (BFLOAT16, np.dtype("float16")),
    "cuda": (BFLOAT16, np.dtype("float16")),
    "sim": (BFLOAT16, np.dtype("float16")),
}


def _device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in DEFAULT_DTYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


class autocast:  # noqa: N801 - PyTorch's name
    """Run the ops of a region (or of a decorated function) in mixed precision on `device_type`.

    `dtype` defaults to bfloat16 on cpu and float16 on cuda and sim; `enabled=False` turns
    autocast off for the region; `cache_enabled` keeps the casts of leaf tensors (weights) for
    reuse within the outermost region.
    """

    def __init__(
        self,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        self.device = _device_type(device_type)
        self.fast_dtype = of(np.dtype(dtype) if dtype is not None else autocast_dtype(self.device))
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        if self._enabled and np.dtype(self.fast_dtype) not in _SUPPORTED[self.device]:
            names = ", ".join(f"aa.{of(d)!s}" for d in _SUPPORTED[self.device])
            warnings.warn(
                f"In {self.device.upper()} autocast, but the target dtype is not supported. "
                f"Disabling autocast.\n{self.device.upper()} Autocast only supports dtype of "
                f"{names} currently.",
                stacklevel=2,
            )
            self._enabled = False
        self._tokens: list[Any] = []

    def __enter__(self) -> None:
        previous = autocast_state.get()
        enabled = dict(previous.enabled) if previous is not None else {}
        dtypes = dict(previous.dtypes) if previous is not None else {}
        low = np.dtype(self.fast_dtype)
        dtypes[self.device] = low
        if self._enabled:
            enabled[self.device] = low
        else:
            enabled.pop(self.device, None)
        depth = previous.depth + 1 if previous is not None else 1
        cache = previous.cache if previous is not None else None
        if cache is None and self._cache_enabled:
            cache = {}
        elif not self._cache_enabled:
            cache = None
        self._tokens.append(autocast_state.set(AutocastState(enabled, dtypes, cache, depth)))

    def __exit__(self, *exc: object) -> None:
        autocast_state.reset(self._tokens.pop())

    def _again(self) -> autocast:
        return autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled)

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self._again():
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._again():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports `device_type`."""
    return device_type in DEFAULT_DTYPES


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` in the current context (cuda when not given)."""
    state = autocast_state.get()
    return state is not None and _device_type(device_type) in state.enabled


def get_autocast_dtype(device_type: str) -> Any:
    """The lower precision autocast uses for `device_type` in the current context."""
    return of(autocast_dtype(_device_type(device_type)))


def set_autocast_enabled(device_type: Any, enabled: bool | None = None) -> None:
    """Turn autocast on or off for `device_type` in the current context, without a region.

    PyTorch's older form `set_autocast_enabled(enabled)` means cuda.
    """
    if enabled is None:
        device_type, enabled = "cuda", device_type
    previous = autocast_state.get()
    state = previous or AutocastState({}, {}, None, 0)
    enabled_types = dict(state.enabled)
    if enabled:
        enabled_types[_device_type(device_type)] = autocast_dtype(device_type)
    else:
        enabled_types.pop(_device_type(device_type), None)
    autocast_state.set(AutocastState(enabled_types, state.dtypes, state.cache, state.depth))


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the lower precision of `device_type` in the current context."""
    state = autocast_state.get() or AutocastState({}, {}, None, 0)
    low = np.dtype(dtype)
    dtypes = {**state.dtypes, _device_type(device_type): low}
    enabled = dict(state.enabled)
    if device_type in enabled:
        enabled[device_type] = low
    autocast_state.set(AutocastState(enabled, dtypes, state.cache, state.depth))


def clear_autocast_cache() -> None:
    """Drop the cached casts of leaf tensors."""
    state = autocast_state.get()
    if state is not None and state.cache is not None:
        state.cache.clear()


# PyTorch's per-device forms, deprecated there in favour of the device_type argument.
def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"torch.{old} is deprecated. Please use torch.{new} instead.",
        DeprecationWarning,
        stacklevel=3,
    )


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: `is_autocast_enabled("cpu")`."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype() -> Any:
    """Deprecated: `get_autocast_dtype("cpu")`."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> Any:
    """Deprecated: `get_autocast_dtype("cuda")`."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: `set_autocast_enabled("cpu", enabled)`."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Deprecated: `set_autocast_dtype("cpu", dtype)`."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype: Any) -> None:
    """Deprecated: `set_autocast_dtype("cuda", dtype)`."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
