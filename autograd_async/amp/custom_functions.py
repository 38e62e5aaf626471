"""`custom_fwd` / `custom_bwd`: decorators for the forward and backward of a custom
`autograd.Function` under autocast, as `torch.amp` has them.

`custom_fwd` records, on the ctx, the autocast state the forward ran under; with `cast_inputs` it
casts the floating-point tensor arguments on `device_type` to that dtype and runs the forward
with autocast off (only inside an autocast region: elsewhere it changes nothing). `custom_bwd`
runs the backward under the autocast state its forward recorded, since backward otherwise runs
on a device worker, outside the caller's autocast.
"""

from __future__ import annotations

import collections.abc
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.tensor import Tensor
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled

_FLOAT64 = np.dtype("float64")


def _require_device_type(device_type: Any) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def cast_floating(value: Any, device_type: str, dtype: Any) -> Any:
    """`value` with its floating-point tensors on `device_type` (not float64) cast to `dtype`,
    through lists, tuples, mappings and other iterables, as PyTorch's `_cast`."""
    if isinstance(value, Tensor):
        eligible = (
            value.is_floating_point()
            and value.device.type == device_type
            and value.dtype != _FLOAT64
        )
        return value.to(dtype=dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {
            cast_floating(k, device_type, dtype): cast_floating(v, device_type, dtype)
            for k, v in value.items()
        }
    if isinstance(value, collections.abc.Iterable):
        items = (cast_floating(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: Any = None) -> Any:
    """Decorate a custom Function's `forward` (see the module's docstring)."""
    _require_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_autocast = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if not in_autocast:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(
                *cast_floating(args, device_type, cast_inputs),
                **cast_floating(kwargs, device_type, cast_inputs),
            )

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Any:
    """Decorate a custom Function's `backward`: it runs with its forward's autocast state."""
    _require_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
