"""Count the array memory a call makes: a NumPy memory handler (NEP 49) that asks a meter first.

NumPy keeps its current data allocator in a context variable, so a handler set for one call
serves that call alone: what it runs on a compute thread (in a copy of its context) and what
its task does on the serving loop, never another peer's call running beside it. Each block is
asked of the call's `Meter` first (`Meter.admit`); a refused block is never allocated: NumPy
raises MemoryError at once, and the meter knows the call and the figures.

Knowing when a block is freed is the hard part. NumPy frees an array's block through the handler
that made it, but often while an exception is propagating, and Python code cannot run then (a
ctypes callback would turn the exception into a SystemError). So blocks are freed by NumPy's own
C function, and the counting learns of it another way: every array NumPy makes holds a reference
to the handler capsule it was made with, and here each capsule serves one array (after each
block, the context's handler moves on to a fresh one; the allocator's `ctx` names the capsule,
so a block is always charged to the capsule that asked for it). A capsule that nothing but this
module refers to any more means its array is gone: `sweep` gives its bytes back to its meter.
A meter sweeps before it refuses a block (so a refusal never comes from arrays already gone),
and the capsules of gone arrays are recycled whenever their count has doubled since the last
sweep.

The blocks themselves come from NumPy's default handler (its cache of small blocks, huge pages
for large ones), called without releasing the interpreter lock, as NumPy calls it. The price
is a Python call and a fresh capsule per array made while counting (benchmarks/README.md,
"Worker memory budget"). CuPy's device memory is not counted here.
"""

from __future__ import annotations

import contextvars
import ctypes
import itertools
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

__all__ = ["Meter", "available", "counting", "sweep"]

logger = logging.getLogger("workers")


class Meter(Protocol):
    """What the handler asks before each block and tells once blocks are found freed."""

    def admit(self, nbytes: int) -> bool:
        """Count `nbytes` about to be allocated, or refuse them (nothing is allocated)."""

    def release(self, nbytes: int) -> None:
        """`nbytes` it admitted were freed."""


# --- NumPy's C API, reached through the capsule every extension module imports ------------
_SET_HANDLER = 304  # PyDataMem_SetHandler in numpy/__multiarray_api.h (NumPy >= 1.22)
_GET_HANDLER = 305  # PyDataMem_GetHandler
_HANDLER_NAME = b"mem_handler"  # the capsule name NumPy checks

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


def _api_function(index: int, restype: type, *argtypes: type) -> Callable[..., Any]:
    # numpy._core since NumPy 2.0, numpy.core before.
    core = getattr(np, "_core", None) or np.core
    table = ctypes.cast(
        _capsule_pointer(core._multiarray_umath._ARRAY_API, None), ctypes.POINTER(ctypes.c_void_p)
    )
    return ctypes.PYFUNCTYPE(restype, *argtypes)(table[index])


_set_handler = _api_function(_SET_HANDLER, ctypes.py_object, ctypes.py_object)
_get_handler = _api_function(_GET_HANDLER, ctypes.py_object)


def _numpy_handler_var() -> contextvars.ContextVar | None:
    """The context variable in which NumPy keeps its current handler: found once, by setting
    it in an empty context, so that a handler is then set from Python at a variable's cost."""

    def probe() -> contextvars.ContextVar | None:
        _set_handler(_get_handler())
        return next((v for v in contextvars.copy_context() if v.name == "current_allocator"), None)

    return contextvars.Context().run(probe)


_handler_var = _numpy_handler_var()

# --- the handler struct (numpy/ndarraytypes.h), with plain addresses for the functions -----
_Malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_Calloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
_Realloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


class _Handler(ctypes.Structure):
    _fields_ = (
        ("name", ctypes.c_char * 127),
        ("version", ctypes.c_uint8),
        ("ctx", ctypes.c_void_p),
        ("malloc", ctypes.c_void_p),
        ("calloc", ctypes.c_void_p),
        ("realloc", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
    )


# NumPy's default handler makes and frees the blocks; its functions ignore `ctx`, which is
# what lets each capsule here carry its own serial number there.
_base_capsule = _get_handler()
_base = ctypes.cast(
    _capsule_pointer(_base_capsule, _HANDLER_NAME), ctypes.POINTER(_Handler)
).contents
available = _base.name == b"default_allocator" and _base.version == 1 and _handler_var is not None
_base_malloc = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)(_base.malloc)
_base_calloc = ctypes.PYFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t
)(_base.calloc)
_base_realloc = ctypes.PYFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
)(_base.realloc)


class _Slot:
    """One capsule: the handler struct it points to, its meter and the bytes charged to it."""

    __slots__ = ("capsule", "handler", "meter", "nbytes")

    def __init__(self, serial: int, meter: Meter | None) -> None:
        self.handler = _Handler(b"autograd_async_counting", 1, serial, *_functions)
        self.capsule = _capsule_new(ctypes.addressof(self.handler), _HANDLER_NAME, None)
        self.meter = meter
        self.nbytes = 0


# Every capsule handed out and not yet found unused, by serial (its allocator's `ctx`); the
# unused ones wait in `_spare` for their next array.
_slots: dict[int, _Slot] = {}
_spare: list[_Slot] = []
# The serials of each meter's slots (by the meter's id: a meter lives while it has slots), so
# that sweeping one call's looks at its own arrays only.
_by_meter: dict[int, set[int]] = {}
_serials = itertools.count(1)
_sweep_lock = threading.Lock()
_swept_size = 0  # len(_slots) after the last sweep: sweep again once it has doubled
# The capsule that this context's next array will take.
_slot_var: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar(
    "workers_memory_slot", default=None
)


def _new_slot(meter: Meter) -> _Slot:
    if not _spare and len(_slots) > 2 * _swept_size + 256:
        sweep()  # capsules of gone arrays come back to `_spare`
    try:
        slot = _spare.pop()
        slot.meter = meter
    except IndexError:
        slot = _Slot(next(_serials), meter)
    serial = slot.handler.ctx
    _slots[serial] = slot
    mine = _by_meter.get(id(meter))
    if mine is None:
        mine = _by_meter[id(meter)] = set()
    mine.add(serial)
    return slot


def _charge(ctx: int | None, nbytes: int) -> _Slot | None:
    """The slot of `ctx`, with `nbytes` admitted by its meter; None when refused."""
    slot = _slots.get(ctx or 0)
    meter = None if slot is None else slot.meter
    if slot is None or meter is None:  # a capsule already swept: not while its array lives
        return None
    if not meter.admit(nbytes):
        return None
    slot.nbytes += nbytes
    # The next array of this context takes a fresh capsule (a slot is only ever set there when
    # NumPy's handler variable was found).
    if _slot_var.get() is slot and _handler_var is not None:
        fresh = _new_slot(meter)
        _handler_var.set(fresh.capsule)
        _slot_var.set(fresh)
    return slot


def _refund(slot: _Slot, nbytes: int) -> None:
    """Give back `nbytes` charged to `slot` for a block that could not be made."""
    slot.nbytes -= nbytes
    if slot.meter is not None:
        slot.meter.release(nbytes)


def _malloc(ctx: int | None, size: int) -> int | None:
    try:
        slot = _charge(ctx, size)
        if slot is None:
            return None  # NumPy raises MemoryError; the meter knows the call and the figures
        ptr = _base_malloc(None, size)
        if not ptr:
            _refund(slot, size)
        return ptr
    except BaseException:  # noqa: BLE001 - nothing may escape into C: fail this block alone
        logger.exception("counting allocator: malloc of %d bytes failed", size)
        return None


def _calloc(ctx: int | None, count: int, itemsize: int) -> int | None:
    try:
        size = count * itemsize
        slot = _charge(ctx, size)
        if slot is None:
            return None
        ptr = _base_calloc(None, count, itemsize)
        if not ptr:
            _refund(slot, size)
        return ptr
    except BaseException:  # noqa: BLE001 - as in _malloc
        logger.exception("counting allocator: calloc of %d x %d bytes failed", count, itemsize)
        return None


def _realloc(ctx: int | None, ptr: int | None, size: int) -> int | None:
    # A resize (np.resize in place, fromiter, loadtxt): the new size is charged in full and
    # the old stays counted until the capsule goes, an overcount that lasts one array's life.
    try:
        slot = _charge(ctx, size)
        if slot is None:
            return None  # the old block stays valid, as after a failed realloc
        new = _base_realloc(None, ptr, size)
        if not new:
            _refund(slot, size)
        return new
    except BaseException:  # noqa: BLE001 - as in _malloc
        logger.exception("counting allocator: realloc to %d bytes failed", size)
        return None


# The callbacks live as long as the process: arrays made through them keep pointing at them.
_callbacks = (_Malloc(_malloc), _Calloc(_calloc), _Realloc(_realloc))
_functions = (*(ctypes.cast(c, ctypes.c_void_p).value for c in _callbacks), _base.free)


def sweep(meter: Meter | None = None) -> int:
    """Give back to their meters the bytes of arrays that are gone (only `meter`'s when
    given); the bytes given back."""
    global _swept_size
    freed = 0
    with _sweep_lock:
        serials = list(_slots) if meter is None else list(_by_meter.get(id(meter), ()))
        for serial in serials:
            slot = _slots.get(serial)
            # Referred to by the slot and by getrefcount's argument alone: no array holds it.
            if slot is None or sys.getrefcount(slot.capsule) > 2:
                continue
            del _slots[serial]
            owner = slot.meter
            mine = _by_meter.get(id(owner))
            if mine is not None:
                mine.discard(serial)
                if not mine:
                    del _by_meter[id(owner)]
            if slot.nbytes and owner is not None:  # (a slot in _slots always has its meter)
                owner.release(slot.nbytes)
                freed += slot.nbytes
            slot.nbytes, slot.meter = 0, None
            _spare.append(slot)
        if meter is None:
            _swept_size = len(_slots)
    return freed


class counting:  # noqa: N801 - used as a function: `with counting(meter):`
    """Count on `meter` the arrays made in this context (and in copies of it taken
    meanwhile) until the block ends."""

    __slots__ = ("_meter", "_tokens")

    def __init__(self, meter: Meter) -> None:
        self._meter = meter
        self._tokens: tuple[contextvars.Token, contextvars.Token] | None = None

    def __enter__(self) -> None:
        if available and _handler_var is not None:  # (available implies the variable)
            slot = _new_slot(self._meter)
            self._tokens = (_slot_var.set(slot), _handler_var.set(slot.capsule))

    def __exit__(self, *exc_info: object) -> None:
        if self._tokens is not None and _handler_var is not None:
            slot_token, handler_token = self._tokens
            _handler_var.reset(handler_token)
            _slot_var.reset(slot_token)
            self._tokens = None
