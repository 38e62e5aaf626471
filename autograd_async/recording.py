"""Where forward ops report themselves while a profiler records the forward pass.

A ContextVar, so recording follows the thread or asyncio task that asked for it and nothing else.
"""

from __future__ import annotations

import contextvars
from typing import Any

forward_sink: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "autograd_async_forward_sink", default=None
)
