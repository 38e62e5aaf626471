"""Shared helpers of the benchmark scripts: timing, statistics, thread pinning, tables.

This module imports neither NumPy nor torch at module level, so a script can call
`limit_blas_threads()` before its own `import numpy`.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import statistics
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BLAS_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def use_repository_checkout() -> None:
    """Import `autograd_async` from this checkout even when run as `python benchmarks/x.py`."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(1, root)


def limit_blas_threads(count: int = 1) -> None:
    """Ask BLAS/OpenMP for `count` threads; effective only before NumPy (or torch) is imported."""
    if "numpy" in sys.modules:
        raise RuntimeError("limit_blas_threads() must run before numpy is imported")
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = str(count)


def blas_threads() -> str:
    """The BLAS thread counts threadpoolctl reports (or the environment's, without it)."""
    try:
        from threadpoolctl import threadpool_info  # noqa: PLC0415
    except ImportError:
        return os.environ.get("OPENBLAS_NUM_THREADS", "library default")
    pools = [f"{p['internal_api']}={p['num_threads']}" for p in threadpool_info()]
    return ", ".join(pools) if pools else "no BLAS pool loaded"


def pin_torch_threads(count: int | None) -> int:
    """Set torch's intra-op threads (None leaves its default); returns the count in use."""
    import torch  # noqa: PLC0415

    if count is not None:
        torch.set_num_threads(count)
    return torch.get_num_threads()


def median(values: Sequence[float]) -> float:
    """The median of `values`."""
    return statistics.median(values)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of `values`, linearly interpolated."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_us(samples: Sequence[float]) -> tuple[float, float]:
    """p50 and p99 of round-trip times given in seconds, in microseconds."""
    return percentile(samples, 50) * 1e6, percentile(samples, 99) * 1e6


def print_latencies(
    title: str, rows: Sequence[tuple[str, str]], samples: dict[str, list[float]], width: int
) -> None:
    """One `label  p50  p99` line per (label, key) row, under a header titled `title`."""
    print(f"\n{title:<{width}}{'p50 us':>10}{'p99 us':>8}")
    for label, key in rows:
        p50, p99 = latency_us(samples[key])
        print(f"{label:<{width}}{p50:>10.1f}{p99:>8.1f}")


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """The median of per-repetition ratios of two interleaved series.

    Each pair ran back to back, so a burst of load from another process mostly hits both; on a
    shared machine this is steadier than the ratio of the two medians.
    """
    return statistics.median(a / b for a, b in zip(numerators, denominators, strict=True))


def spread(values: Sequence[float]) -> str:
    """`min..max` of `values`, for a table column showing the noise."""
    return f"{min(values):.3g}..{max(values):.3g}"


@contextmanager
def gc_state(enabled: bool) -> Iterator[None]:
    """Run the block with the collector enabled or disabled; restores the previous state."""
    was = gc.isenabled()
    gc.collect()
    if enabled:
        gc.enable()
    else:
        gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


def gc_label(enabled: bool | None = None) -> str:
    """'gc enabled' or 'gc disabled' (the current state when `enabled` is None)."""
    state = gc.isenabled() if enabled is None else enabled
    return "gc enabled" if state else "gc disabled"


def machine_line() -> str:
    """Date, CPUs, Python and NumPy versions: the header line of every benchmark."""
    cpus = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cpus
    numpy_version = sys.modules["numpy"].__version__ if "numpy" in sys.modules else "not loaded"
    return (
        f"{datetime.date.today().isoformat()}  {platform.machine()}  {usable} usable CPU(s) "
        f"of {cpus}  Python {platform.python_version()}  NumPy {numpy_version}  {load_line()}"
    )


def load_line() -> str:
    """The 1-minute load average: above the CPU count, other processes are competing."""
    try:
        return f"load average {os.getloadavg()[0]:.2f}"
    except OSError:
        return "load average unknown"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a plain-text table with a title; floats get 4 significant digits."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    texts = [[cell(v) for v in row] for row in rows]
    widths = [
        max(len(str(h)), *(len(r[i]) for r in texts)) if texts else len(str(h))
        for i, h in enumerate(headers)
    ]
    print()
    print(title)
    line = "  ".join(
        str(h).ljust(w) if i == 0 else str(h).rjust(w)
        for i, (h, w) in enumerate(zip(headers, widths, strict=True))
    )
    print(line)
    print("-" * len(line))
    for row in texts:
        print(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(row, widths, strict=True))
            )
        )


def verdict(value: float, target: float, higher_is_better: bool = False) -> str:
    """'meets target' or 'MISSES target' for a ratio against its target."""
    ok = value >= target if higher_is_better else value <= target
    sign = ">=" if higher_is_better else "<="
    return f"{'meets' if ok else 'MISSES'} target ({value:.3g} vs {sign} {target:g})"


def argument_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the options every benchmark shares: --quick and --reps."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="a short smoke run (small sizes, few repetitions)"
    )
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per case")
    return parser


def round_trip_parser(description: str, reps: int) -> argparse.ArgumentParser:
    """A parser with the options of the benchmarks that send a payload there and back."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mib", type=int, default=64, help="payload size in MiB")
    parser.add_argument("--reps", type=int, default=reps, help="timed round trips per mode")
    parser.add_argument("--latency-iters", type=int, default=2000)
    parser.add_argument("--verbose", action="store_true", help="print every round trip")
    return parser
