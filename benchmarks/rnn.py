"""Recurrent layers forward + backward: ours against PyTorch CPU, in one process.

Cases: a 2-layer LSTM and a 2-layer GRU (input 64, hidden 128, sequence 50, batch 32), and a
bidirectional LSTM over a packed batch of sequences of lengths spread between 10 and 50. One
step is `out = layer(x)`, `(out * v).sum().backward()` (gradients of the input and every
parameter), float32, both libraries starting from the same weights (PyTorch's, loaded into ours
through `load_state_dict`). Ours runs each direction of each layer as one graph node that loops
over time on arrays; PyTorch runs its native CPU kernels.

The contenders run in blocks that alternate over several rounds, each after a short pause and
warm-up steps; figures are medians of the timed steps, the target is on the ratio of medians.

Run:  python benchmarks/rnn.py [--reps 30] [--rounds 3] [--threads N] [--quick]
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
from autograd_async import nn  # noqa: E402

TARGET_VS_TORCH = 1.3


class Case:
    """One layer on both libraries with the same weights, input and output cotangent."""

    def __init__(self, kind: str, sizes: dict, bidirectional: bool, lengths: list[int] | None):
        import torch  # noqa: PLC0415

        self.torch = torch
        self.lengths = lengths
        steps, batch = sizes["steps"], sizes["batch"]
        torch.manual_seed(0)
        self.theirs = getattr(torch.nn, kind)(
            sizes["input"], sizes["hidden"], num_layers=2, bidirectional=bidirectional
        )
        self.ours = getattr(nn, kind)(
            sizes["input"], sizes["hidden"], num_layers=2, bidirectional=bidirectional
        )
        self.ours.load_state_dict(
            {k: aa.tensor(v.detach().numpy()) for k, v in self.theirs.state_dict().items()}
        )
        rng = np.random.default_rng(0)
        x = rng.standard_normal((steps, batch, sizes["input"])).astype(np.float32)
        width = sizes["hidden"] * (2 if bidirectional else 1)
        v = rng.standard_normal((steps, batch, width)).astype(np.float32)
        self.x_ours, self.x_theirs = aa.tensor(x, requires_grad=True), torch.tensor(x)
        self.x_theirs.requires_grad_(True)
        self.v_ours, self.v_theirs = aa.tensor(v), torch.tensor(v)

    def _output(self, lib: str):
        layer = self.ours if lib == "ours" else self.theirs
        x = self.x_ours if lib == "ours" else self.x_theirs
        if self.lengths is None:
            return layer(x)[0]
        utils = nn.utils.rnn if lib == "ours" else self.torch.nn.utils.rnn
        packed = utils.pack_padded_sequence(x, self.lengths, enforce_sorted=False)
        # padded again: PyTorch orders sequences of equal length its own way in the packed rows
        return utils.pad_packed_sequence(layer(packed)[0], total_length=x.shape[0])[0]

    def step(self, lib: str) -> None:
        """Forward and backward; the gradients are dropped before the next step."""
        layer = self.ours if lib == "ours" else self.theirs
        x = self.x_ours if lib == "ours" else self.x_theirs
        x.grad = None
        for p in layer.parameters():
            p.grad = None
        v = self.v_ours if lib == "ours" else self.v_theirs
        (self._output(lib) * v).sum().backward()

    def difference(self) -> float:
        """Largest relative difference of the input's gradient between the two libraries."""
        self.step("ours")
        self.step("theirs")
        a, b = self.x_ours.grad.numpy(), self.x_theirs.grad.numpy()
        return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def time_blocks(
    steps: dict[str, Callable[[], None]], reps: int, warmup: int, rounds: int, pause: float = 0.2
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
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="BLAS and torch threads (default: each library's own default)",
    )
    args = parser.parse_args()
    if args.quick:
        sizes = {"input": 8, "hidden": 16, "steps": 6, "batch": 4}
    else:
        sizes = {"input": 64, "hidden": 128, "steps": 50, "batch": 32}
    reps = args.reps or (2 if args.quick else 30)
    rounds = 1 if args.quick else args.rounds
    warmup = 1 if args.quick else 3
    torch_threads = pin_torch_threads(args.threads)
    rng = np.random.default_rng(1)
    lengths = [
        int(n) for n in rng.integers(sizes["steps"] // 5, sizes["steps"] + 1, sizes["batch"])
    ]
    lengths[0] = sizes["steps"]
    print(__doc__.splitlines()[0])
    print(machine_line())
    print(
        f"float32, input {sizes['input']}, hidden {sizes['hidden']}, sequence "
        f"{sizes['steps']}, batch {sizes['batch']}, 2 layers; BLAS threads: {blas_threads()}; "
        f"torch threads {torch_threads}; {gc_label()}; {reps} timed steps in {rounds} "
        f"round(s), {warmup} warm-up per block"
    )
    cases = {
        "LSTM": Case("LSTM", sizes, False, None),
        "GRU": Case("GRU", sizes, False, None),
        "LSTM bidirectional packed": Case("LSTM", sizes, True, lengths),
    }
    rows = []
    ratios = {}
    for name, case in cases.items():
        diff = case.difference()
        gc.collect()
        times = time_blocks(
            {"ours": lambda c=case: c.step("ours"), "torch": lambda c=case: c.step("theirs")},
            reps,
            warmup,
            rounds,
        )
        ours_ms, torch_ms = median(times["ours"]) * 1e3, median(times["torch"]) * 1e3
        ratios[name] = ours_ms / torch_ms
        rows.append(
            [
                name,
                ours_ms,
                torch_ms,
                ratios[name],
                spread([t * 1e3 for t in times["ours"]]),
                f"{diff:.1e}",
            ]
        )
    print_table(
        "forward + backward (medians)",
        ["case", "ours ms", "torch ms", "ours / torch", "ours ms min..max", "grad x rel diff"],
        rows,
    )
    worst = max(ratios.values())
    print(
        f"\ntarget: ours / torch <= {TARGET_VS_TORCH} in every case (worst {worst:.3f}): "
        f"{verdict(worst, TARGET_VS_TORCH)}"
    )
    print(f"{load_line()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
