"""The device engine: a worker thread with its own event loop per device."""

import atexit

from .device_worker import DeviceWorker
from .engine import (
    DeviceStats,
    Engine,
    EngineClosedError,
    current_engine,
    get_engine,
    set_loop,
    shutdown,
)
from .loops import default_loop_kind, uvloop_available

atexit.register(shutdown, 2.0)

__all__ = [
    "DeviceStats",
    "DeviceWorker",
    "Engine",
    "EngineClosedError",
    "current_engine",
    "default_loop_kind",
    "get_engine",
    "set_loop",
    "shutdown",
    "uvloop_available",
]
