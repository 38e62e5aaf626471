"""The MLP training step on cuda:0 against the same step in PyTorch CUDA, in one run; the share of
backward the GPU is busy; and CuPy's memory pool over many steps. For `gpu_check.sh`.

Net: 784-1024-1024-10, ReLU, cross entropy, float32, batch 256, SGD lr 0.01, same weights and
batch for both. A step ends when its loss is read on the host (one sync per step, in both).

  step        median ms/step of ours and of torch, and their ratio (target: ours <= 1.2x torch)
  busy        the sum of the per-node GPU spans (timing events around each backward node) over
              backward's span on the stream (timing events before and after it), all measured
              by CUDA events, none by host time (target: >= 90%)
  pool        CuPy's default memory pool (used and total bytes) sampled over `--pool-steps`
              steps: flat once warm (the last sample no more than 5% above the first)

Exits 1 when a check fails (`--no-targets` reports the timing targets without failing on them).

Run:  python benchmarks/gpu_mlp.py [--steps 50] [--busy-steps 20] [--pool-steps 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _reference_mlp import torch_mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import autograd_async as aa  # noqa: E402
from autograd_async.engine.trace_events import GpuKernelSpan  # noqa: E402

SIZES = (784, 1024, 1024, 10)
BATCH = 256


def make_data(seed: int = 0) -> tuple[list, np.ndarray, np.ndarray]:
    """Weights, inputs and targets shared by both contenders."""
    rng = np.random.default_rng(seed)
    weights = [
        # Scaled before the cast: under NumPy 2 a float32 array over a float64 scalar is float64.
        (
            (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32),
            np.zeros(n_out, np.float32),
        )
        for n_in, n_out in zip(SIZES[:-1], SIZES[1:])
    ]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return weights, x, y


class Ours:
    """The step in autograd-async on cuda:0."""

    def __init__(self, weights: list, x: np.ndarray, y: np.ndarray) -> None:
        layers = []
        for i, (w, b) in enumerate(weights):
            linear = aa.nn.Linear(w.shape[1], w.shape[0])
            linear.weight = aa.nn.Parameter(aa.tensor(w))
            linear.bias = aa.nn.Parameter(aa.tensor(b))
            layers.append(linear)
            if i < len(weights) - 1:
                layers.append(aa.nn.ReLU())
        self.model = aa.nn.Sequential(*layers).to("cuda:0")
        self.opt = aa.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = aa.tensor(x, device="cuda:0")
        self.y = aa.tensor(y, device="cuda:0")

    def step(self, backward_events: tuple | None = None) -> float:
        self.opt.zero_grad()
        loss = aa.nn.functional.cross_entropy(self.model(self.x), self.y)
        if backward_events is None:
            loss.backward()
        else:  # backward's span on the GPU: events on the stream around it
            start, end = backward_events
            start.record()
            loss.backward()
            end.record()
        self.opt.step()
        return float(loss.item())


class Torch:
    """The same step in PyTorch on CUDA."""

    def __init__(self, torch, weights: list, x: np.ndarray, y: np.ndarray) -> None:
        self.torch = torch
        self.model = torch_mlp(torch, weights).cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = torch.from_numpy(x).cuda()
        self.y = torch.from_numpy(y).cuda()

    def step(self) -> float:
        self.opt.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        return float(loss.item())


def median_ms(step, steps: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        begun = time.perf_counter()
        step()
        times.append((time.perf_counter() - begun) * 1e3)
    return statistics.median(times)


def busy_share(ours: Ours, steps: int) -> float:
    """GPU busy share of backward, all from CUDA events: the nodes' GPU spans (events around
    each node on its stream) over backward's span on the stream (events before and after)."""
    span_ms = 0.0
    with aa.profiler.profile(record_forward=False) as prof:
        for _ in range(steps):
            start, end = aa.Event(enable_timing=True), aa.Event(enable_timing=True)
            ours.step((start, end))
            end.synchronize()
            span_ms += start.elapsed_time(end)
    gpu_ns = sum(ev.end_ns - ev.start_ns for ev in prof.events if type(ev) is GpuKernelSpan)
    return gpu_ns / (span_ms * 1e6) if span_ms else 0.0


def pool_samples(ours: Ours, steps: int, every: int = 100) -> list[tuple[int, int, int]]:
    import cupy  # noqa: PLC0415

    pool = cupy.get_default_memory_pool()
    samples = []
    for i in range(1, steps + 1):
        ours.step()
        if i % every == 0:
            samples.append((i, pool.used_bytes(), pool.total_bytes()))
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--busy-steps", type=int, default=20, help="profiled steps")
    parser.add_argument("--pool-steps", type=int, default=1000)
    parser.add_argument("--pool-every", type=int, default=100, help="steps between samples")
    parser.add_argument("--no-targets", action="store_true", help="report timing targets only")
    args = parser.parse_args(argv)
    if not aa.cuda.is_available():
        print("no CUDA GPU (or no CuPy): nothing to measure")
        return 1
    weights, x, y = make_data()
    failures = []
    ours = Ours(weights, x, y)
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        torch = None
    ours_ms = median_ms(ours.step, args.steps)
    print(f"step: ours {ours_ms:.3f} ms", end="")
    if torch is not None and torch.cuda.is_available():
        theirs = Torch(torch, weights, x, y)
        torch_ms = median_ms(theirs.step, args.steps)
        ratio = ours_ms / torch_ms
        print(f", torch cuda {torch_ms:.3f} ms, ours/torch {ratio:.2f} (target <= 1.2)")
        if ratio > 1.2 and not args.no_targets:
            failures.append(f"MLP step {ratio:.2f}x torch cuda > 1.2x")
        fresh_ours, fresh_theirs = Ours(weights, x, y), Torch(torch, weights, x, y)
        for _ in range(3):
            a, b = fresh_ours.step(), fresh_theirs.step()
        print(f"agreement after 3 steps: loss ours {a:.6f}, torch {b:.6f}")
        if abs(a - b) > 1e-3 * max(1.0, abs(b)):
            failures.append(f"losses differ after 3 steps: {a} vs {b}")
    else:
        print(", torch cuda unavailable: no comparison")
    share = busy_share(ours, args.busy_steps)
    print(f"busy: GPU busy {100 * share:.1f}% of backward on the stream (target >= 90%)")
    if share < 0.9 and not args.no_targets:
        failures.append(f"GPU busy {100 * share:.1f}% < 90% of backward")
    samples = pool_samples(ours, args.pool_steps, args.pool_every)
    for step, used, total in samples:
        print(f"pool: step {step:5d} used {used / 2**20:9.2f} MiB total {total / 2**20:9.2f} MiB")
    if samples:
        first, last = samples[0][2], samples[-1][2]
        if last > first * 1.05 + 2**20:
            failures.append(f"memory pool grew from {first} to {last} bytes")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
