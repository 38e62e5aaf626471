"""Cost of profiling on the chain benchmark: a 20,000-op backward, with and without a profile.

    .venv/bin/python benchmarks/profiler_overhead.py [--ops 20000] [--repeats 7] [--device cpu]

The chain alternates `y = y * 1.0001 + 0.5` and `y = y.tanh()` on a (4,) float64 tensor, so the time
is the engine's per-node overhead, which is what a trace sink adds to. Each repeat builds a fresh
graph (untimed) and times one `backward()`; profiled and plain runs alternate so drift hits both
alike. Prints the medians and their ratio; `--check` exits 1 when the ratio is above `--limit`.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# Run from a checkout without installing: the repository root holds the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograd_async.creation import tensor  # noqa: E402
from autograd_async.profiler import profile  # noqa: E402


def build_chain(n_ops: int, device: str) -> tuple[object, object]:
    """A leaf and the scalar at the end of an `n_ops`-op chain of (4,) float64 tensors."""
    x = tensor(np.linspace(-1.0, 1.0, 4), dtype=np.float64, device=device, requires_grad=True)
    y = x
    ops = 0
    affine = True
    while ops < n_ops:
        if affine:
            y = y * 1.0001 + 0.5  # two ops: mul, add
            ops += 2
        else:
            y = y.tanh()
            ops += 1
        affine = not affine
    return x, y.sum()


def time_backward(n_ops: int, device: str, profiled: bool) -> tuple[float, int]:
    """Seconds for one backward of a fresh chain, and how many records the profile kept."""
    _, loss = build_chain(n_ops, device)
    gc.collect()
    gc.disable()  # a collection inside the timed region is noise, not profiler cost
    try:
        if profiled:
            with profile() as prof:
                start = time.perf_counter()
                loss.backward()
                elapsed = time.perf_counter() - start
            return elapsed, len(prof.events)
        start = time.perf_counter()
        loss.backward()
        return time.perf_counter() - start, 0
    finally:
        gc.enable()


def main() -> int:
    """Run the benchmark and print both medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20_000, help="ops in the chain")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each kind")
    parser.add_argument("--device", default="cpu", help="device of the chain")
    parser.add_argument("--limit", type=float, default=1.20, help="ratio allowed by --check")
    parser.add_argument("--check", action="store_true", help="exit 1 when the ratio > --limit")
    args = parser.parse_args()

    time_backward(args.ops, args.device, False)  # warm-up: threads, loops, caches
    time_backward(args.ops, args.device, True)
    plain: list[float] = []
    profiled: list[float] = []
    records = 0
    for i in range(args.repeats):
        # Alternate which goes first so a slow phase of the machine is shared by both.
        order = (False, True) if i % 2 == 0 else (True, False)
        for with_profile in order:
            elapsed, n = time_backward(args.ops, args.device, with_profile)
            (profiled if with_profile else plain).append(elapsed)
            records = max(records, n)
    off, on = statistics.median(plain), statistics.median(profiled)
    ratio = on / off
    print(f"chain of {args.ops} ops on {args.device}, median of {args.repeats} backward runs")
    print(f"  profiling off: {off * 1e3:8.2f} ms  (runs: {_ms(plain)})")
    print(f"  profiling on:  {on * 1e3:8.2f} ms  (runs: {_ms(profiled)}; {records} records)")
    print(f"  ratio on/off:  {ratio:.3f}  (limit {args.limit:.2f})")
    return 1 if args.check and ratio > args.limit else 0


def _ms(runs: list[float]) -> str:
    return " ".join(f"{r * 1e3:.1f}" for r in runs)


if __name__ == "__main__":
    sys.exit(main())
