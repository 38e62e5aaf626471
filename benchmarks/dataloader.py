"""One shuffled epoch of a TensorDataset through DataLoader: ours against PyTorch's, one process.

Data: 60,000 x 784 float32 inputs and int64 labels (MNIST's shape), batch 256, shuffle=True,
num_workers=0 for both. Each round times one full epoch of ours, then one of torch's (and, as a
floor, the same epoch written by hand in NumPy: a permutation and fancy indexing per batch);
rounds alternate, so a burst of load hits both alike. Medians of epoch times, and the median of
the per-round ratios.

Run:  python benchmarks/dataloader.py [--reps 7] [--quick]
"""

from __future__ import annotations

import time

from _timing import (
    argument_parser,
    machine_line,
    median,
    paired_ratio,
    pin_torch_threads,
    print_table,
    spread,
    use_repository_checkout,
    verdict,
)

use_repository_checkout()

import numpy as np  # noqa: E402

import autograd_async as aa  # noqa: E402
from autograd_async.utils import data  # noqa: E402

TARGET_VS_TORCH = 1.2
BATCH = 256


def epoch_seconds(loader) -> float:  # noqa: ANN001
    """Seconds to draw every batch of one epoch (touching each so nothing is left lazy)."""
    start = time.perf_counter()
    for x, y in loader:
        x.shape, y.shape  # noqa: B018
    return time.perf_counter() - start


def numpy_epoch_seconds(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> float:
    """The hand-written floor: one permutation, then fancy indexing per batch."""
    start = time.perf_counter()
    order = rng.permutation(len(x))
    for i in range(0, len(x), BATCH):
        rows = order[i : i + BATCH]
        x[rows], y[rows]  # noqa: B018
    return time.perf_counter() - start


def main() -> None:
    """Time the epochs and print the table and verdict."""
    parser = argument_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    import torch  # noqa: PLC0415

    pin_torch_threads(None)
    rows = 6_000 if args.quick else 60_000
    reps = args.reps or (2 if args.quick else 7)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, 784)).astype(np.float32)
    y = rng.integers(0, 10, rows)
    ours = data.DataLoader(
        data.TensorDataset(aa.tensor(x), aa.tensor(y)), batch_size=BATCH, shuffle=True
    )
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
        batch_size=BATCH,
        shuffle=True,
    )
    epoch_seconds(ours), epoch_seconds(theirs)  # warm-up
    times: dict[str, list[float]] = {"ours": [], "torch": [], "NumPy by hand": []}
    for _ in range(reps):
        times["ours"].append(epoch_seconds(ours))
        times["torch"].append(epoch_seconds(theirs))
        times["NumPy by hand"].append(numpy_epoch_seconds(x, y, rng))
    print(machine_line())
    print_table(
        f"One shuffled epoch, {rows} x 784 float32, batch {BATCH}, num_workers=0 ({reps} rounds)",
        ["loader", "median ms", "spread", "per batch us"],
        [
            (
                name,
                median(t) * 1e3,
                spread([v * 1e3 for v in t]),
                median(t) / -(-rows // BATCH) * 1e6,
            )
            for name, t in times.items()
        ],
    )
    ratio = paired_ratio(times["ours"], times["torch"])
    print(f"\ntarget: ours / torch DataLoader {ratio:.3f}: {verdict(ratio, TARGET_VS_TORCH)}")


if __name__ == "__main__":
    main()
