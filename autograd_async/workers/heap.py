"""The worker process's heap: freed large blocks are kept for reuse instead of unmapped.

glibc serves a block above its mmap threshold (at most 32 MiB even as it adapts, and any block
too big for a thread's own arena) with a fresh mapping, and unmaps it when freed. A worker makes
and drops tensors of tens of MiB per request (a remote `clone` of 64 MiB, an activation), so
each time it paid a page fault per page and the kernel zeroing all of it: for a 64 MiB clone
about half as much again as the copy itself. With one arena and high mmap and trim thresholds
such blocks come from the heap, and a freed one is reused warm.

The price: freed blocks below `retain_bytes` stay with the process for reuse instead of going
back to the system (the heap gives its free top back only once that exceeds `retain_bytes`), so
the worker's resident memory follows its peak use, which its byte quotas and memory budget
bound; after a burst (a call refused for memory, or one that used half its memory share) the
free memory goes back to the system once calls pause (`MemoryGuard`, workers/memory.py). Only
the worker process does this (its entry point calls `retain_freed_blocks`); the library never
changes the allocator of a process that imports it.
"""

from __future__ import annotations

import sys

from autograd_async.utils.malloc import retain_freed_memory

__all__ = ["DEFAULT_RETAIN_BYTES", "retain_freed_blocks"]

DEFAULT_RETAIN_BYTES = 1 << 30


def retain_freed_blocks(retain_bytes: int = DEFAULT_RETAIN_BYTES) -> bool:
    """Make glibc's malloc keep and reuse freed blocks below `retain_bytes`; True when it
    agreed, False (nothing changed) with another C library or system. Call it before the
    process starts threads."""
    if not sys.platform.startswith("linux") or not 0 < retain_bytes < 2**31:
        return False
    # One arena, so that blocks made on the worker's compute threads come from the same heap.
    return retain_freed_memory(retain_bytes, retain_bytes, single_arena=True)
