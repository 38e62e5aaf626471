"""The seam through which `autograd_async.func.vmap` sees ops, functions and random draws.

Ops and creation functions sit below the function transforms, so they cannot import them: they
ask this module instead. `autograd_async.func` registers its handlers here once (`install`);
until then, and outside `vmap`, every check is one attribute or ContextVar read.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any, NamedTuple


class VmapLevel(NamedTuple):
    """One active `vmap`: its level number, batch size and randomness mode."""

    level: int
    size: int
    randomness: str


# The active vmaps of this task, innermost last.
vmap_levels: contextvars.ContextVar[tuple[VmapLevel, ...]] = contextvars.ContextVar(
    "autograd_async_vmap_levels", default=()
)


def _unregistered(*_: Any) -> Any:
    """Each handler until `autograd_async.func` registers its own (importing the package does)."""
    raise RuntimeError("vmap's batching rules are not registered: import autograd_async.func")


class BatchingHandlers:
    """What `autograd_async.func` registers: how batched ops, functions and draws run."""

    __slots__ = ("op", "function", "draw")

    def __init__(self) -> None:
        self.op: Callable[[type, tuple, dict], Any] = _unregistered
        self.function: Callable[[str, Callable, tuple, dict], Any] = _unregistered
        self.draw: Callable[[Callable[[tuple], Any], tuple], Any] = _unregistered


HANDLERS = BatchingHandlers()


def batched_op(cls: type, inputs: tuple, kwargs: dict) -> Any:
    """Run an op that got a batched tensor through the registered batching rules."""
    return HANDLERS.op(cls, inputs, kwargs)


def batchable(fn: Callable) -> Callable:
    """Let `vmap` run `fn` by a rule (or per example) when it gets batched tensors.

    For public functions that read their inputs' arrays directly instead of going through an
    op, where an op-level rule would not see them.
    """
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not vmap_levels.get():
            return fn(*args, **kwargs)
        return HANDLERS.function(name, fn, args, kwargs)

    return wrapper


def random_draw(draw: Callable[[tuple], Any], shape: tuple) -> Any:
    """A random tensor of `shape` from `draw(shape)`, as the innermost vmap's randomness says."""
    if not vmap_levels.get():
        return draw(shape)
    return HANDLERS.draw(draw, shape)
