"""Cost of profiling on the chain benchmark: a 20,000-op backward, with and without a profile.

    .venv/bin/python benchmarks/profiler_overhead.py [--ops 20000] [--repeats 7] [--device cpu]

The chain alternates `y = y * 1.0001 + 0.5` and `y = y.tanh()` on a (4,) float64 tensor, so the time
is the engine's per-node overhead, which is what a trace sink adds to. Each repeat builds a fresh
graph (untimed) and times one `backward()`, in three modes that take turns so drift hits all alike:
no sink, a sink that drops every record (the engine's cost of building them) and `profile()`.
Prints the medians and the profile/off ratio; `--check` exits 1 when it is above `--limit`.

Then the forward side: building the chain (untimed above) with profiling off, under
`profile(record_forward=False)` and under `profile()`, which records every forward op by default.
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

from autograd_async import ones_like, tensor  # noqa: E402
from autograd_async.engine import get_engine  # noqa: E402
from autograd_async.profiler import profile  # noqa: E402


def build_chain(n_ops: int, device: str) -> tuple[object, object]:
    """A leaf and the (4,) output at the end of an `n_ops`-op chain of float64 tensors."""
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
    return x, y


class _DiscardingSink:
    """A sink that keeps nothing: what is left is the engine's cost of building the records."""

    gpu_timing = False

    def record(self, event: object) -> None:
        """Drop the record."""


def time_backward(n_ops: int, device: str, mode: str) -> tuple[float, int]:
    """Seconds for one backward of a fresh chain in `mode` (off, discard, profile); records kept.

    `discard` installs a sink that drops every record, which separates the engine's cost of
    building records from the profiler's cost of keeping them.
    """
    _, out = build_chain(n_ops, device)
    seed = ones_like(out)  # backward(ones) is sum().backward() without the reduction node
    gc.collect()
    gc.disable()  # a collection inside the timed region is noise, not profiler cost
    try:
        if mode == "profile":
            with profile() as prof:
                start = time.perf_counter()
                out.backward(seed)
                elapsed = time.perf_counter() - start
            return elapsed, len(prof.events)
        engine = get_engine()
        if mode == "discard":
            engine.set_trace_sink(_DiscardingSink())
        try:
            start = time.perf_counter()
            out.backward(seed)
            return time.perf_counter() - start, 0
        finally:
            engine.set_trace_sink(None)
    finally:
        gc.enable()


def time_forward(n_ops: int, device: str, mode: str) -> float:
    """Seconds to build an `n_ops` chain in `mode` (off, backward-only, profile)."""
    gc.collect()
    gc.disable()
    try:
        if mode == "off":
            start = time.perf_counter()
            build_chain(n_ops, device)
            return time.perf_counter() - start
        with profile(record_forward=mode == "profile"):
            start = time.perf_counter()
            build_chain(n_ops, device)
            return time.perf_counter() - start
    finally:
        gc.enable()


def main() -> int:
    """Run the benchmark and print the medians and the on/off ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20_000, help="ops in the chain")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each kind")
    parser.add_argument("--device", default="cpu", help="device of the chain")
    parser.add_argument("--limit", type=float, default=1.20, help="ratio allowed by --check")
    parser.add_argument("--check", action="store_true", help="exit 1 when the ratio > --limit")
    args = parser.parse_args()

    modes = ("off", "discard", "profile")
    for mode in modes:
        time_backward(args.ops, args.device, mode)  # warm-up: threads, loops, caches
    runs: dict[str, list[float]] = {mode: [] for mode in modes}
    records = 0
    for i in range(args.repeats):
        # Rotate which goes first so a slow phase of the machine is shared by all modes.
        for mode in modes[i % 3 :] + modes[: i % 3]:
            elapsed, n = time_backward(args.ops, args.device, mode)
            runs[mode].append(elapsed)
            records = max(records, n)
    off, discard, on = (statistics.median(runs[mode]) for mode in modes)
    ratio = on / off
    print(f"chain of {args.ops} ops on {args.device}, median of {args.repeats} backward runs")
    print(f"  profiling off:          {off * 1e3:8.2f} ms  (runs: {_ms(runs['off'])})")
    print(f"  sink dropping records:  {discard * 1e3:8.2f} ms  (runs: {_ms(runs['discard'])})")
    print(
        f"  profiling on:           {on * 1e3:8.2f} ms  (runs: {_ms(runs['profile'])}; "
        f"{records} records)"
    )
    print(
        f"  ratio on/off:           {ratio:.3f}  (limit {args.limit:.2f}); of the added time, "
        f"{_share(discard - off, on - off)} is the engine building records, "
        f"{_share(on - discard, on - off)} the profiler keeping them"
    )
    forward_modes = ("off", "backward-only", "profile")
    forward_runs: dict[str, list[float]] = {mode: [] for mode in forward_modes}
    for i in range(args.repeats):
        for mode in forward_modes[i % 3 :] + forward_modes[: i % 3]:
            forward_runs[mode].append(time_forward(args.ops, args.device, mode))
    f_off, f_backward_only, f_on = (statistics.median(forward_runs[m]) for m in forward_modes)
    print(f"forward (building the chain), median of {args.repeats}")
    print(f"  profiling off:          {f_off * 1e3:8.2f} ms")
    print(f"  record_forward=False:   {f_backward_only * 1e3:8.2f} ms")
    print(f"  profile() (default):    {f_on * 1e3:8.2f} ms  (ratio on/off {f_on / f_off:.3f})")
    return 1 if args.check and ratio > args.limit else 0


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole > 0 else "n/a"


def _ms(runs: list[float]) -> str:
    return " ".join(f"{r * 1e3:.1f}" for r in runs)


if __name__ == "__main__":
    sys.exit(main())
