"""Process-wide switches PyTorch keeps in its global context: deterministic algorithms, the
float32 matmul precision, warn-always; and the default generator's seed and state.

These are settings of the process, not of a task: PyTorch reads them from every thread, so
they live in one `RuntimeSettings` object rather than in ContextVars (which a new thread would
not see). NumPy and CuPy kernels here are deterministic and compute float32 products at full
precision whatever the settings say; the settings are kept so programs that set and read them
run unchanged.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .core.tensor import Tensor
from .creation import default_generator

_DEBUG_MODES = ("default", "warn", "error")
_PRECISIONS = ("highest", "high", "medium")


@dataclass(slots=True)
class RuntimeSettings:
    """The switches, guarded by one lock so a reader never sees half an update."""

    deterministic: bool = False
    warn_only: bool = False
    matmul_precision: str = "highest"
    warn_always: bool = False


_settings = RuntimeSettings()
_lock = threading.Lock()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (every kernel here already is)."""
    if not isinstance(mode, bool):
        raise TypeError(
            "_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
            f"{type(mode).__name__}"
        )
    with _lock:
        _settings.deterministic = mode
        _settings.warn_only = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether deterministic algorithms were asked for."""
    return _settings.deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic algorithms were asked for with warn_only=True."""
    return _settings.warn_only


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """0 / "default", 1 / "warn", 2 / "error": deterministic algorithms off, warning, on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, but "
                f"got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES.index(debug_mode)
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 when deterministic algorithms are off, 1 when they only warn, 2 when they are on."""
    if not _settings.deterministic:
        return 0
    return 1 if _settings.warn_only else 2


def set_float32_matmul_precision(precision: str) -> None:
    """ "highest", "high" or "medium" (kept and reported; products here are full float32)."""
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "setFloat32MatmulPrecision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    with _lock:
        _settings.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set ("highest" by default)."""
    return _settings.matmul_precision


def set_warn_always(b: bool) -> None:
    """Whether warnings PyTorch gives once per process are given every time."""
    with _lock:
        _settings.warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether set_warn_always(True) is in effect."""
    return _settings.warn_always


def seed() -> int:
    """Seed the default generator from a fresh non-deterministic seed, and return it."""
    fresh = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)
    default_generator.manual_seed(fresh)
    return fresh


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> dict:
    """The default generator's state, for set_rng_state (a dict here, not a byte tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state: dict) -> None:
    """Restore the default generator's state from get_rng_state."""
    default_generator.set_state(new_state)


_TENSOR_TYPES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor",
    "int64": "LongTensor",
    "int32": "IntTensor",
    "int16": "ShortTensor",
    "int8": "CharTensor",
    "uint8": "ByteTensor",
    "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}


def typename(obj: Any) -> str:
    """PyTorch's name of an object's type: `torch.FloatTensor` for a float32 tensor."""
    if isinstance(obj, Tensor):
        where = "" if obj.device.type == "cpu" else f"{obj.device.type}."
        return f"torch.{where}{_TENSOR_TYPES.get(str(obj.dtype), str(obj.dtype))}"
    module = getattr(obj, "__module__", "") or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    if module in ("", "builtins"):
        return name
    return f"{module}.{name}"


def get_device(input: Tensor) -> int:
    """The index of the tensor's device: -1 on the cpu."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"get_device(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    return -1 if input.device.type == "cpu" else int(input.device.index or 0)


__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_deterministic_debug_mode",
    "get_device",
    "get_float32_matmul_precision",
    "get_rng_state",
    "initial_seed",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_warn_always_enabled",
    "seed",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_rng_state",
    "set_warn_always",
    "typename",
    "use_deterministic_algorithms",
]
