"""Which event loop the device workers run: uvloop's when installed, plain asyncio otherwise."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

LOOP_ENV = "AUTOGRAD_ASYNC_LOOP"
LOOP_KINDS = ("uvloop", "asyncio")


def uvloop_available() -> bool:
    """True when uvloop can be imported."""
    try:
        import uvloop  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def default_loop_kind() -> str:
    """The loop kind from AUTOGRAD_ASYNC_LOOP, else uvloop when installed, else asyncio."""
    raw = os.environ.get(LOOP_ENV, "").strip().lower()
    if raw:
        if raw not in LOOP_KINDS:
            raise ValueError(f"{LOOP_ENV} must be one of {LOOP_KINDS}, got {raw!r}")
        return raw
    return "uvloop" if uvloop_available() else "asyncio"


def loop_factory(kind: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """A function that makes a new event loop of `kind` ('uvloop' or 'asyncio')."""
    if kind not in LOOP_KINDS:
        raise ValueError(f"loop kind must be one of {LOOP_KINDS}, got {kind!r}")
    if kind == "uvloop":
        try:
            import uvloop  # noqa: PLC0415
        except ImportError as exc:
            raise RuntimeError("the uvloop loop was asked for; uvloop is not installed") from exc
        return uvloop.new_event_loop
    return asyncio.new_event_loop
