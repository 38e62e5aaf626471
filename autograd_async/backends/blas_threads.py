"""The thread count of the BLAS under NumPy, narrowed to one while split work runs.

A convolution split over its batch (`ops.conv_arrays`) runs one small matmul per batch item on
each intra-op thread. OpenBLAS's own threads gain nothing on such a product (a 32 x 144 x 1088
matmul took as long on two of its threads as on one), and two callers that each fan out over
every core slow each other several times over. So while split work runs, each caller's BLAS
runs on that caller alone.

OpenBLAS keeps one thread count for the whole process (its `openblas_set_num_threads_local`
sets that same count and returns the old one), so narrowing it is counted: the first section to
open saves the count and sets one, the last to close restores it. Any matmul that another
thread makes meanwhile also runs on one BLAS thread; that costs speed, never a result. The
library is found among those the process has loaded; a BLAS that is not OpenBLAS (MKL,
Accelerate) is not found, `available` is False, and callers keep their unsplit path.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# The exported names of OpenBLAS's thread count functions: plain builds, 64-bit-integer builds
# (suffix 64_) and the scipy-openblas builds that NumPy's wheels ship (prefix scipy_).
_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "_64_", "")


@dataclass(frozen=True)
class BlasControls:
    """The getter and setter of one BLAS library's thread count, and where it was loaded from."""

    path: str
    get: Any
    set: Any


def _loaded_library_paths() -> list[str]:
    """Shared libraries with "openblas" in their name that this process has loaded (or NumPy
    ships, where the loaded list cannot be read)."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "openblas" in os.path.basename(path).lower() and path not in paths:
                    paths.append(path)
    except OSError:  # not Linux: look where NumPy's wheels keep their BLAS
        import numpy as np  # noqa: PLC0415

        root = os.path.dirname(np.__file__)
        for folder in (os.path.join(root, ".dylibs"), root + ".libs"):
            paths += sorted(glob.glob(os.path.join(folder, "*openblas*")))
    return paths


def _numpys_first(paths: list[str]) -> list[str]:
    """NumPy's own BLAS first: another OpenBLAS (SciPy's, say) has a thread count of its own."""
    return sorted(paths, key=lambda p: "numpy" not in p)


def _controls_of(path: str) -> BlasControls | None:
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    for prefix in _PREFIXES:
        for suffix in _SUFFIXES:
            getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if getter is not None and setter is not None:
                getter.restype, getter.argtypes = ctypes.c_int, []
                setter.restype, setter.argtypes = None, [ctypes.c_int]
                return BlasControls(path, getter, setter)
    return None


def find_controls() -> BlasControls | None:
    """The thread count controls of the OpenBLAS that NumPy uses, or None."""
    import numpy  # noqa: F401, PLC0415  (loads NumPy's BLAS, if nothing has yet)

    paths = _numpys_first(_loaded_library_paths())
    if len([p for p in paths if "numpy" in p]) != 1 and len(paths) != 1:
        return None  # several candidates and none of them plainly NumPy's: leave BLAS alone
    return _controls_of(paths[0])


class BlasThreads:
    """Counted sections during which NumPy's BLAS runs one thread per caller."""

    def __init__(self, controls: Any = ...) -> None:
        self._controls = controls  # `...`: look the library up on first use
        self._lock = threading.Lock()
        self._open = 0
        self._saved: int | None = None

    def _found(self) -> BlasControls | None:
        if self._controls is ...:
            with self._lock:
                if self._controls is ...:
                    self._controls = find_controls()
        return self._controls

    @property
    def available(self) -> bool:
        """Whether the BLAS thread count can be narrowed (NumPy on OpenBLAS)."""
        return self._found() is not None

    def current(self) -> int | None:
        """The BLAS thread count now, or None when it cannot be read."""
        controls = self._found()
        return None if controls is None else int(controls.get())

    @contextmanager
    def one_per_caller(self) -> Iterator[None]:
        """Run the block with BLAS on one thread per caller; the count comes back at the end.

        Sections may nest and overlap across threads: the count is restored when the last one
        closes, to what it was before the first opened.
        """
        controls = self._found()
        if controls is None:
            yield
            return
        with self._lock:
            if self._open == 0:
                self._saved = int(controls.get())
                if self._saved > 1:
                    controls.set(1)
            self._open += 1
        try:
            yield
        finally:
            with self._lock:
                self._open -= 1
                if self._open == 0 and self._saved is not None and self._saved > 1:
                    controls.set(self._saved)


# The BLAS thread count is the process's (OpenBLAS keeps one), so its guard is one object too.
BLAS = BlasThreads()
