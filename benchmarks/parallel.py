"""Parallel backward: two independent branches on two devices against both on one device.

Each branch is a chain of large GIL-releasing NumPy work on its device: h = tanh(x @ W1),
h = tanh(h @ W2), out = h @ W3 with 1024x1024 float32 matrices (x takes no gradient, the Ws do:
five matmuls and two tanh backward per branch). The loss sums both branches after moving them to
cpu. Split: branch A on sim:0, branch B on sim:1, so their backward nodes run on two worker
threads at once. Serial: both branches on sim:0, one worker. Only `loss.backward()` is timed
(the forward runs on the calling thread either way); the two cases alternate repetition by
repetition and the medians are compared.

BLAS threads are pinned to 1 before NumPy is imported: a multithreaded BLAS would spread each
matmul over both cores by itself, so one device worker would already use the whole machine and
hide what running two workers at once gains. (threadpoolctl reports the pools in use.)

Run:  python benchmarks/parallel.py [--size 1024] [--reps 9] [--quick]
"""

from __future__ import annotations

import concurrent.futures
import sys
import time
from typing import Any

from _timing import (
    argument_parser,
    blas_threads,
    gc_label,
    limit_blas_threads,
    load_line,
    machine_line,
    median,
    paired_ratio,
    print_table,
    spread,
    use_repository_checkout,
    verdict,
)

limit_blas_threads(1)
use_repository_checkout()

import numpy as np  # noqa: E402

import autograd_async as aa  # noqa: E402
from autograd_async.engine import get_engine  # noqa: E402

TARGET_SPEEDUP = 1.7
MATMULS_PER_BRANCH = 5  # in each branch's backward: dW1, and dh and dW for each of the others


class Branch:
    """The leaves of one branch on one device: input x and weights W1..W3."""

    def __init__(self, size: int, device: str, seed: int) -> None:
        rng = np.random.default_rng(seed)
        scale = np.float32(1 / np.sqrt(size))
        self.x = aa.tensor(rng.standard_normal((size, size), dtype=np.float32), device=device)
        self.weights = [
            aa.tensor(
                rng.standard_normal((size, size), dtype=np.float32) * scale,
                device=device,
                requires_grad=True,
            )
            for _ in range(3)
        ]

    def forward(self) -> Any:
        """The branch's output (on its device)."""
        w1, w2, w3 = self.weights
        h = aa.tanh(self.x @ w1)
        h = aa.tanh(h @ w2)
        return h @ w3

    def clear(self) -> None:
        """Drop the weights' gradients."""
        for w in self.weights:
            w.grad = None


def build_loss(a: Branch, b: Branch) -> Any:
    """Both branches moved to cpu and summed."""
    return a.forward().to("cpu").sum() + b.forward().to("cpu").sum()


def time_backward(a: Branch, b: Branch) -> tuple[float, float, dict]:
    """(forward seconds, backward seconds, per-device engine stats) of one fresh graph."""
    a.clear()
    b.clear()
    engine = get_engine()
    begun = time.perf_counter()
    loss = build_loss(a, b)
    built = time.perf_counter()
    engine.reset_stats()
    loss.backward()
    done = time.perf_counter()
    return built - begun, done - built, engine.stats()


class RawThreads:
    """The control: the same matmul count in plain threads, one thread vs two, no engine.

    Its speedup is what the machine allows at the moment (another process on one of the two
    cores caps it), so the engine's speedup can be read against it.
    """

    def __init__(self, size: int, matmuls: int) -> None:
        rng = np.random.default_rng(3)
        self.matmuls = matmuls
        self.pairs = [
            (
                rng.standard_normal((size, size), dtype=np.float32),
                rng.standard_normal((size, size), dtype=np.float32),
                np.empty((size, size), np.float32),
            )
            for _ in range(2)
        ]
        self.pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="raw")

    def _branch(self, index: int) -> None:
        a, b, out = self.pairs[index]
        for _ in range(self.matmuls):
            np.matmul(a, b, out=out)

    def serial(self) -> float:
        """Seconds for both branches on one thread."""
        begun = time.perf_counter()
        self.pool.submit(lambda: (self._branch(0), self._branch(1))).result()
        return time.perf_counter() - begun

    def split(self) -> float:
        """Seconds for the branches on two threads at once."""
        begun = time.perf_counter()
        futures = [self.pool.submit(self._branch, i) for i in range(2)]
        for f in futures:
            f.result()
        return time.perf_counter() - begun

    def close(self) -> None:
        """Stop the threads."""
        self.pool.shutdown()


def main() -> int:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size (default 1024)")
    args = parser.parse_args()
    size = args.size or (256 if args.quick else 1024)
    reps = args.reps or (2 if args.quick else 9)
    warmup = 1 if args.quick else 2

    print(__doc__.splitlines()[0])
    print(machine_line())
    print(
        f"{size}x{size} float32 branches; BLAS threads: {blas_threads()}; {gc_label()}; "
        f"{reps} timed reps after {warmup} warm-up, cases alternating"
    )

    cases = {
        "serial (both on sim:0)": (Branch(size, "sim:0", 1), Branch(size, "sim:0", 2)),
        "split (sim:0 + sim:1)": (Branch(size, "sim:0", 1), Branch(size, "sim:1", 2)),
    }
    forward: dict[str, list[float]] = {name: [] for name in cases}
    backward: dict[str, list[float]] = {name: [] for name in cases}
    busy: dict[str, dict[str, list[float]]] = {name: {} for name in cases}
    raw = RawThreads(size, MATMULS_PER_BRANCH)
    raw_times: dict[str, list[float]] = {"serial": [], "split": []}
    try:
        for i in range(warmup + reps):
            for name, (a, b) in cases.items():
                fwd, bwd, stats = time_backward(a, b)
                if i >= warmup:
                    forward[name].append(fwd)
                    backward[name].append(bwd)
                    for device, s in stats.items():
                        busy[name].setdefault(device, []).append(s.busy_ns * 1e-9)
            serial_s, split_s = raw.serial(), raw.split()
            if i >= warmup:
                raw_times["serial"].append(serial_s)
                raw_times["split"].append(split_s)
    finally:
        raw.close()

    serial, split = cases["serial (both on sim:0)"], cases["split (sim:0 + sim:1)"]
    same = all(
        np.allclose(ws.grad.to("cpu").numpy(), wp.grad.to("cpu").numpy(), rtol=1e-5, atol=1e-6)
        for s_branch, p_branch in zip(serial, split, strict=True)
        for ws, wp in zip(s_branch.weights, p_branch.weights, strict=True)
    )
    rows = []
    for name in cases:
        devices = ", ".join(f"{d} {median(v) * 1e3:.1f}" for d, v in sorted(busy[name].items()))
        rows.append(
            [
                name,
                median(backward[name]) * 1e3,
                spread([t * 1e3 for t in backward[name]]),
                median(forward[name]) * 1e3,
                devices,
            ]
        )
    for name in ("serial", "split"):
        label = "control: 10 matmuls, " + ("1 thread" if name == "serial" else "2 threads")
        rows.append(
            [
                label,
                median(raw_times[name]) * 1e3,
                spread([t * 1e3 for t in raw_times[name]]),
                "-",
                "-",
            ]
        )
    print_table(
        "backward() of both branches, and the plain-thread control (medians, ms)",
        ["case", "backward", "min..max", "forward", "worker busy ms"],
        rows,
    )
    speedup = median(backward["serial (both on sim:0)"]) / median(backward["split (sim:0 + sim:1)"])
    paired = paired_ratio(backward["serial (both on sim:0)"], backward["split (sim:0 + sim:1)"])
    ceiling = paired_ratio(raw_times["serial"], raw_times["split"])
    print(f"\ngradients agree between the two cases: {same}")
    print(
        f"speedup split vs serial: ratio of medians {speedup:.2f}x, median of per-repetition "
        f"ratios {paired:.2f}x"
    )
    print(
        f"control (plain threads, same matmuls, no engine): {ceiling:.2f}x, what the machine "
        f"allowed during this run (below ~1.9x, another process held a core); the engine "
        f"reached {paired / ceiling:.0%} of it"
    )
    print(
        f"target: speedup >= {TARGET_SPEEDUP}x (ratio of medians): "
        f"{verdict(speedup, TARGET_SPEEDUP, higher_is_better=True)}"
    )
    print(f"\n{load_line()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
