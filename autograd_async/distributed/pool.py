"""A receive-buffer pool: large received arrays reuse memory that nobody refers to any more.

Receiving into a freshly allocated array costs a page fault (and the kernel zeroing a page) per
page touched, and freeing it unmaps it again; for tens of MiB that is a large part of a loopback
transfer. The pool keeps the flat byte buffers of large received arrays and hands one out again
once the only reference left to it is the pool's own: every NumPy view of a buffer (the array a
caller got, its reshapes, slices, and memoryviews over them) holds a reference to it, so a
buffer is reused only when no array made from it is alive.

One pool serves one connection (one reader, one thread): no locking.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

__all__ = ["ALIGNMENT", "DEFAULT_POOL_BYTES", "MIN_POOLED_BYTES", "ReceivePool"]

DEFAULT_POOL_BYTES = 256 << 20
MIN_POOLED_BYTES = 1 << 20
# Pooled buffers start on a page boundary. The kernel copies socket data into them a string
# instruction at a time, and measurably slower (about a tenth more CPU per received byte on
# the benchmark machine) into memory that is not cache-line aligned, which is where a large
# malloc'ed block starts: 16 bytes past a page.
ALIGNMENT = 4096
# Held only by the pool's list and by getrefcount's own argument.
_IDLE_REFS = 2


class ReceivePool:
    """Allocates receive arrays, reusing idle pooled buffers of at least `min_bytes`."""

    def __init__(
        self,
        max_bytes: int = DEFAULT_POOL_BYTES,
        min_bytes: int = MIN_POOLED_BYTES,
        max_buffers: int = 8,
    ) -> None:
        self.max_bytes = max_bytes
        self.min_bytes = min_bytes
        self.max_buffers = max_buffers
        self._buffers: list[np.ndarray] = []
        self.reused = 0

    @property
    def pooled_bytes(self) -> int:
        """Bytes held by the pool, whether in use or idle."""
        return sum(b.nbytes for b in self._buffers)

    def _idle(self, i: int) -> bool:
        return sys.getrefcount(self._buffers[i]) <= _IDLE_REFS

    def empty(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """An uninitialised C-contiguous array, from an idle pooled buffer when one fits."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.min_bytes:
            return np.empty(shape, dtype)
        best = -1
        for i in range(len(self._buffers)):  # by index: a loop variable would add a reference
            size = self._buffers[i].nbytes
            if (
                nbytes <= size <= 2 * nbytes
                and self._idle(i)
                and (best < 0 or size < self._buffers[best].nbytes)
            ):
                best = i
        if best >= 0:
            self.reused += 1
            return _lend(self._buffers[best], nbytes, dtype, shape)
        buf = _aligned_bytes(nbytes)
        self._make_room(nbytes)
        if len(self._buffers) < self.max_buffers and self.pooled_bytes + nbytes <= self.max_bytes:
            self._buffers.append(buf)
            return _lend(buf, nbytes, dtype, shape)
        return buf.view(dtype).reshape(shape)

    def _make_room(self, nbytes: int) -> None:
        """Drop idle buffers (smallest first) until `nbytes` more would fit."""
        order = sorted(range(len(self._buffers)), key=lambda i: self._buffers[i].nbytes)
        doomed: set[int] = set()
        held = self.pooled_bytes
        for i in order:
            if len(self._buffers) - len(doomed) < self.max_buffers and held + nbytes <= (
                self.max_bytes
            ):
                break
            if self._idle(i):
                doomed.add(i)
                held -= self._buffers[i].nbytes
        if doomed:
            self._buffers = [b for i, b in enumerate(self._buffers) if i not in doomed]

    def clear(self) -> None:
        """Forget every pooled buffer (arrays still in use stay valid)."""
        self._buffers = []


def _aligned_bytes(nbytes: int) -> np.ndarray:
    """A flat uint8 array of `nbytes` starting on an ALIGNMENT boundary (a view of a block a
    little larger, which it keeps alive)."""
    block = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -block.ctypes.data % ALIGNMENT
    return block[start : start + nbytes]


def _lend(buf: np.ndarray, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """An array over the first `nbytes` of a pooled buffer, through a fresh memoryview.

    Going through a new memoryview gives each loan its own base object, so that code keying on
    an array's memory owner (autograd's `claim`, which lets a leaf keep its first gradient
    without a copy) sees a new owner per loan rather than the pool's long-lived buffer; the
    view still holds a reference to the buffer for as long as any array of the loan lives.
    """
    return np.frombuffer(buf.data[:nbytes], dtype).reshape(shape)
