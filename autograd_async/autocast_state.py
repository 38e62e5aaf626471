"""The autocast state of the current context: which device types run ops in a lower precision.

A ContextVar, like grad mode, so each thread and asyncio task has its own; device workers run
backward in their own context, where autocast is off, so backward runs each op in the dtypes
its forward chose (the gradients arrive in those dtypes, and the casts' own backward converts
them back).
"""

from __future__ import annotations

import contextvars
from typing import Any

import numpy as np

from .dtypes import BFLOAT16

FLOAT16 = np.dtype("float16")

DEFAULT_DTYPES: dict[str, np.dtype] = {"cpu": BFLOAT16, "cuda": FLOAT16, "sim": FLOAT16}
"""The lower precision each device type's autocast uses by default (PyTorch's cpu and cuda)."""


class AutocastState:
    """Autocast settings of one context: immutable; entering an autocast makes a new one."""

    __slots__ = ("enabled", "dtypes", "cache", "depth")

    def __init__(
        self,
        enabled: dict[str, np.dtype],
        dtypes: dict[str, np.dtype],
        cache: dict[int, Any] | None,
        depth: int,
    ) -> None:
        #: Device types autocast is on for, with their lower precision.
        self.enabled = enabled
        #: The lower precision per device type, also where autocast is off.
        self.dtypes = dtypes
        #: Casts of leaf tensors made in the outermost autocast region (None: no caching).
        self.cache = cache
        #: How many autocast regions are open (the cache is dropped when the last closes).
        self.depth = depth


autocast_state: contextvars.ContextVar[AutocastState | None] = contextvars.ContextVar(
    "autograd_async_autocast", default=None
)


def autocast_dtype(device_type: str) -> np.dtype:
    """The lower precision of `device_type` in the current context."""
    state = autocast_state.get()
    if state is not None and device_type in state.dtypes:
        return state.dtypes[device_type]
    return DEFAULT_DTYPES[device_type]
