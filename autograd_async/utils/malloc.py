"""Keep freed memory for reuse (glibc): fewer page faults for NumPy's large temporaries.

Every op allocates its outputs and temporaries afresh. glibc serves a large block (above a
threshold that adapts between 128 KiB and 32 MiB) by mmap and unmaps it on free, and it trims
free memory off the top of its heaps; the next block of that size is then new memory, and each
4 KiB page of it faults on first touch (about a microsecond on a VM). A training step of the
examples' CNN made about 2,900 such faults (12 MB of fresh pages), a sixth of its time. Raising
both thresholds keeps freed blocks in the heap for the next op, at the price of holding on to
the peak working set. PyTorch's CPU performance guides reach the same with jemalloc or TCMalloc.
The setting is process-wide, so it is the application's call, never a side effect of import.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
# glibc's own ceiling for its adaptive mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX);
# older releases refuse a setting above it.
MAX_MMAP_THRESHOLD = 32 << 20


def retain_freed_memory(
    mmap_threshold: int = MAX_MMAP_THRESHOLD,
    trim_threshold: int = 256 << 20,
    single_arena: bool = False,
) -> bool:
    """Serve blocks below `mmap_threshold` from the heap and trim it only past `trim_threshold`.

    `single_arena` keeps every thread on the main heap: another thread's arena holds at most
    64 MiB, so larger blocks made on a worker thread would be mapped afresh whatever the
    thresholds say. Call it before the process starts threads. Returns whether the C library took
    every setting (False, with nothing changed, off glibc: macOS, musl).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)  # the process's own C library
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: others read these options otherwise
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    options = [(M_MMAP_THRESHOLD, int(mmap_threshold)), (M_TRIM_THRESHOLD, int(trim_threshold))]
    if single_arena:
        options.insert(0, (M_ARENA_MAX, 1))
    return all(mallopt(option, value) == 1 for option, value in options)


def release_free_memory() -> bool:
    """Give the free memory of the C library's heaps back to the system now (glibc's
    `malloc_trim`): what `retain_freed_memory` keeps, after a burst that will not recur.
    Returns whether any was given back (False off glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    return trim(0) == 1
