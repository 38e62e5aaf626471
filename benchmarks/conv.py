"""conv2d forward + backward: ours against PyTorch CPU, in one process.

One step: `out = conv2d(x, w, b, padding=1)`, `(out * v).sum().backward()` (gradients of the input,
the weight and the bias), float32, batch 32, 16 -> 32 channels, 3x3 kernel, 32x32 images.
Both start from the same arrays. Ours runs im2col (one strided copy) and one matmul forward,
one matmul for the weight's gradient and a matmul plus col2im for the input's. With more than one
intra-op thread (`aa.set_num_threads`, by default the usable cores) it runs them a few batch items
at a time on every thread, each part's columns in cache and its matmuls on one BLAS thread
(`ops/conv_items.py`); with one, on the whole batch, the matmuls on BLAS's own threads.

The contenders run in blocks that alternate over several rounds (torch's OpenMP pool and NumPy's
BLAS pool would fight for the cores if interleaved step by step), each block after a short pause
and warm-up steps. Figures are medians of the timed steps; the target is on the ratio of medians.
`--threads N` gives BLAS, our intra-op pool and torch the same thread count (each library's
default otherwise). The process keeps freed memory for reuse (`utils.malloc`, for both libraries
alike) unless `--default-malloc` is given.

Run:  python benchmarks/conv.py [--reps 30] [--rounds 3] [--threads N] [--stride S]
      [--default-malloc] [--quick]
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

from _timing import (
    argument_parser,
    blas_threads,
    gc_label,
    limit_blas_threads,
    load_line,
    machine_line,
    median,
    pin_torch_threads,
    print_table,
    spread,
    use_repository_checkout,
    verdict,
)

use_repository_checkout()
if "--threads" in sys.argv:  # BLAS reads its thread count when NumPy loads: set it before
    limit_blas_threads(int(sys.argv[sys.argv.index("--threads") + 1]))

import numpy as np  # noqa: E402

import autograd_async as aa  # noqa: E402
from autograd_async.nn import functional as F  # noqa: E402, N812
from autograd_async.utils.malloc import retain_freed_memory  # noqa: E402

TARGET_VS_TORCH = 2.0


def make_arrays(batch: int, cin: int, cout: int, size: int, stride: int = 1) -> list[np.ndarray]:
    """Input, weight, bias and the output's cotangent, float32, from a fixed seed."""
    rng = np.random.default_rng(0)
    out = (size + 2 - 3) // stride + 1  # padding 1
    return [
        rng.standard_normal((batch, cin, size, size)).astype(np.float32),
        (rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float32),
        rng.standard_normal(cout).astype(np.float32),
        rng.standard_normal((batch, cout, out, out)).astype(np.float32),
    ]


class OursStep:
    """One forward and backward with autograd_async."""

    def __init__(self, arrays: list[np.ndarray], stride: int = 1) -> None:
        x, w, b, v = arrays
        self.stride = stride
        self.x = aa.tensor(x, requires_grad=True)
        self.w = aa.tensor(w, requires_grad=True)
        self.b = aa.tensor(b, requires_grad=True)
        self.v = aa.tensor(v)

    def step(self) -> None:
        """Forward and backward; the gradients are dropped before the next step."""
        self.x.grad = self.w.grad = self.b.grad = None
        out = F.conv2d(self.x, self.w, self.b, stride=self.stride, padding=1)
        (out * self.v).sum().backward()

    def grads(self) -> list[np.ndarray]:
        """The three gradients after a step."""
        self.step()
        return [t.grad.numpy() for t in (self.x, self.w, self.b)]


class TorchStep:
    """The same step with torch."""

    def __init__(self, arrays: list[np.ndarray], stride: int = 1) -> None:
        import torch  # noqa: PLC0415

        x, w, b, v = arrays
        self.stride = stride
        self.x = torch.tensor(x, requires_grad=True)
        self.w = torch.tensor(w, requires_grad=True)
        self.b = torch.tensor(b, requires_grad=True)
        self.v = torch.tensor(v)
        self.conv2d = torch.nn.functional.conv2d

    def step(self) -> None:
        """Forward and backward; the gradients are dropped before the next step."""
        self.x.grad = self.w.grad = self.b.grad = None
        out = self.conv2d(self.x, self.w, self.b, stride=self.stride, padding=1)
        (out * self.v).sum().backward()

    def grads(self) -> list[np.ndarray]:
        """The three gradients after a step."""
        self.step()
        return [t.grad.numpy() for t in (self.x, self.w, self.b)]


def time_blocks(
    steps: dict[str, Callable[[], None]], reps: int, warmup: int, rounds: int, pause: float = 0.3
) -> dict[str, list[float]]:
    """Seconds per step of each contender, in blocks alternating over `rounds` rounds."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    per_round = [reps // rounds + (1 if r < reps % rounds else 0) for r in range(rounds)]
    for r, count in enumerate(per_round):
        names = list(steps) if r % 2 == 0 else list(steps)[::-1]
        for name in names:
            step = steps[name]
            time.sleep(pause)
            for i in range(warmup + count):
                begun = time.perf_counter()
                step()
                if i >= warmup:
                    times[name].append(time.perf_counter() - begun)
    return times


def main() -> int:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=32, help="image height and width")
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS and torch threads (default: each library's own default)",
    )
    parser.add_argument(
        "--default-malloc",
        action="store_true",
        help="keep glibc's default thresholds (both libraries fault in fresh "
        "pages for their large temporaries)",
    )
    args = parser.parse_args()
    retained = not args.default_malloc and retain_freed_memory()
    if args.threads is not None:
        aa.set_num_threads(args.threads)
    batch, size = (2, 8) if args.quick else (args.batch, args.size)
    cin, cout = 16, 32
    reps = args.reps or (3 if args.quick else 30)
    rounds = 1 if args.quick else args.rounds
    warmup = 1 if args.quick else 3

    arrays = make_arrays(batch, cin, cout, size, args.stride)
    torch_threads = pin_torch_threads(args.threads)
    print(__doc__.splitlines()[0])
    print(machine_line())
    print(
        f"conv2d float32, batch {batch}, {cin} -> {cout} channels, 3x3, {size}x{size}, "
        f"stride {args.stride}, "
        f"padding 1; BLAS threads: {blas_threads()}; ours intra-op threads "
        f"{aa.get_num_threads()}; torch threads {torch_threads}; "
        f"{gc_label()}; {reps} timed steps in {rounds} round(s), {warmup} warm-up per block; "
        f"freed memory {'retained' if retained else 'returned (default malloc)'}"
    )

    ours, theirs = OursStep(arrays, args.stride), TorchStep(arrays, args.stride)
    diffs = [
        float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))
        for a, b in zip(ours.grads(), theirs.grads(), strict=True)
    ]
    gc.collect()
    times = time_blocks(
        {"ours": ours.step, f"torch ({torch_threads} threads)": theirs.step}, reps, warmup, rounds
    )
    ours_ms = median(times["ours"]) * 1e3
    rows = []
    for name, values in times.items():
        ms = median(values) * 1e3
        rows.append([name, ms, ours_ms / ms, spread([t * 1e3 for t in values])])
    print_table(
        "conv2d forward + backward (medians)",
        ["contender", "ms/step", "ours / this", "ms min..max"],
        rows,
    )
    torch_times = times[f"torch ({torch_threads} threads)"]
    ratio = ours_ms / (median(torch_times) * 1e3)
    print(
        f"\nours / torch: ratio of medians {ratio:.3f}, of minima "
        f"{min(times['ours']) / min(torch_times):.3f}"
    )
    print(
        f"agreement: largest relative difference of the gradients (x, w, b): "
        f"{', '.join(f'{d:.1e}' for d in diffs)}"
    )
    print(f"target: ours / torch <= {TARGET_VS_TORCH}: {verdict(ratio, TARGET_VS_TORCH)}")
    print(f"{load_line()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
