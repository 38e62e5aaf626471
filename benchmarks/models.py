"""One training step of the examples' CNN and transformer: ours against the same model in PyTorch
CPU, in one process.

  CNN          examples/cnn.py's model (two 3x3 convolutions with batch norm, max pooling,
               dropout, two linears) on a batch of 32 8x8 digit-sized images
  transformer  examples/transformer.py's model (embeddings, 2 pre-norm encoder layers of width
               64 with 4 heads, readout) on a batch of 64 sequences of 8 tokens

A step is zero_grad, forward, cross-entropy, backward and an AdamW update. Both libraries start
from the same weights (ours are loaded from torch's state_dict) and see the same batches.
Rounds alternate blocks of ours and torch's steps; medians of step times, and the median of the
per-round ratios of each library's faster setting: torch with its default threads and with one,
ours with NumPy's default BLAS threads and intra-op threads and with one of each (as the examples
run, where a loader thread and the device worker share the cores).

The process keeps freed memory for reuse (`autograd_async.utils.malloc`, both libraries alike)
unless `--default-malloc` is given.

Run:  python benchmarks/models.py [--reps 7] [--steps 20] [--default-malloc] [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import numpy as np  # noqa: E402
from cnn import cnn  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402
from transformer import VOCAB, SequenceModel, make_batch  # noqa: E402

import autograd_async as aa  # noqa: E402
from autograd_async import nn  # noqa: E402
from autograd_async.utils.malloc import retain_freed_memory  # noqa: E402

TARGET_VS_TORCH = 1.5


def torch_cnn(torch, width: int = 32):  # noqa: ANN001, ANN201
    """The same CNN in torch.nn."""
    tnn = torch.nn
    return tnn.Sequential(
        tnn.Unflatten(1, (1, 8, 8)),
        tnn.Conv2d(1, width, 3, padding=1, bias=False),
        tnn.BatchNorm2d(width),
        tnn.ReLU(),
        tnn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
        tnn.BatchNorm2d(2 * width),
        tnn.ReLU(),
        tnn.MaxPool2d(2),
        tnn.Dropout(0.25),
        tnn.Flatten(),
        tnn.Linear(2 * width * 16, 128),
        tnn.ReLU(),
        tnn.Dropout(0.25),
        tnn.Linear(128, 10),
    )


def torch_sequence_model(torch, length: int, width: int, heads: int, layers: int):  # noqa: ANN001, ANN201
    """The same transformer in torch.nn."""
    tnn = torch.nn

    class Model(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = tnn.Embedding(VOCAB, width)
            self.positions = tnn.Embedding(length, width)
            layer = tnn.TransformerEncoderLayer(
                width,
                heads,
                dim_feedforward=2 * width,
                dropout=0.0,
                batch_first=True,
                norm_first=True,
            )
            self.encoder = tnn.TransformerEncoder(
                layer, layers, norm=tnn.LayerNorm(width), enable_nested_tensor=False
            )
            self.readout = tnn.Linear(width, VOCAB)
            self.register_buffer("where", torch.arange(length), persistent=False)

        def forward(self, tokens):  # noqa: ANN001, ANN202
            x = self.tokens(tokens) + self.positions(self.where)
            return self.readout(self.encoder(x))

    return Model()


def copy_weights(ours: nn.Module, theirs) -> None:  # noqa: ANN001
    """Load torch's weights into ours (the keys match one to one)."""
    ours.load_state_dict({k: aa.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


def step_ours(model, optimizer, x, y, classes):  # noqa: ANN001, ANN201
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x).reshape((-1, classes)), y.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss


def step_torch(torch, model, optimizer, x, y, classes):  # noqa: ANN001, ANN201
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, classes), y.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss


def time_block(step, steps: int) -> float:  # noqa: ANN001
    """Median seconds per step over a block of `steps`."""
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return median(times)


def compare(name: str, torch, ours_model, torch_model, x, y, classes, reps, steps):  # noqa: ANN001
    """Interleaved blocks of training steps; prints the table and returns the ratio."""
    copy_weights(ours_model, torch_model)
    opt_ours = aa.optim.AdamW(ours_model.parameters(), lr=1e-3)
    opt_torch = torch.optim.AdamW(torch_model.parameters(), lr=1e-3, foreach=False)
    xo, yo = aa.tensor(x), aa.tensor(y)
    xt, yt = torch.tensor(x), torch.tensor(y)
    contenders = {
        "ours": lambda: step_ours(ours_model, opt_ours, xo, yo, classes),
        "torch": lambda: step_torch(torch, torch_model, opt_torch, xt, yt, classes),
    }
    for step in contenders.values():  # warm-up
        for _ in range(3):
            step()
    results: dict[str, list[float]] = {
        "ours": [],
        "ours (1 BLAS thread)": [],
        "torch": [],
        "torch (1 thread)": [],
    }
    default_threads = torch.get_num_threads()
    ours_threads = aa.get_num_threads()
    for _ in range(reps):
        results["ours"].append(time_block(contenders["ours"], steps))
        aa.set_num_threads(1)  # our intra-op helper too, as torch.set_num_threads(1) below
        with threadpool_limits(limits=1, user_api="blas"):
            results["ours (1 BLAS thread)"].append(time_block(contenders["ours"], steps))
        aa.set_num_threads(ours_threads)
        results["torch"].append(time_block(contenders["torch"], steps))
        torch.set_num_threads(1)
        results["torch (1 thread)"].append(time_block(contenders["torch"], steps))
        torch.set_num_threads(default_threads)
    print_table(
        f"{name}: one training step ({reps} rounds of {steps} steps)",
        ["contender", "median ms", "spread ms"],
        [(k, median(v) * 1e3, spread([t * 1e3 for t in v])) for k, v in results.items()],
    )
    # Each library's faster setting in each round: a busy machine favours one thread, an idle
    # one the default threads.
    ours_best = [min(pair) for pair in zip(results["ours"], results["ours (1 BLAS thread)"])]
    torch_best = [min(pair) for pair in zip(results["torch"], results["torch (1 thread)"])]
    ratio = paired_ratio(ours_best, torch_best)
    print(f"\ntarget: ours / torch ({name}) {ratio:.3f}: {verdict(ratio, TARGET_VS_TORCH)}")
    return ratio


def main() -> None:
    """Time both models' steps and print the tables and verdicts."""
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="steps per timed block")
    parser.add_argument(
        "--default-malloc",
        action="store_true",
        help="keep glibc's default thresholds (fresh pages for large temporaries)",
    )
    args = parser.parse_args()
    retained = not args.default_malloc and retain_freed_memory()
    import torch  # noqa: PLC0415

    pin_torch_threads(None)
    reps = args.reps or (2 if args.quick else 7)
    steps = args.steps or (3 if args.quick else 20)
    rng = np.random.default_rng(0)
    print(machine_line())
    print(f"freed memory {'retained' if retained else 'returned (default malloc)'}")
    torch.manual_seed(0)
    aa.manual_seed(0)
    images = rng.standard_normal((32, 64)).astype(np.float32)
    labels = rng.integers(0, 10, 32)
    compare("CNN", torch, cnn(), torch_cnn(torch), images, labels, 10, reps, steps)
    tokens, target = make_batch("sort", rng, 64, 8)
    compare(
        "transformer",
        torch,
        SequenceModel(8, 64, 4, 2),
        torch_sequence_model(torch, 8, 64, 4, 2),
        tokens,
        target,
        VOCAB,
        reps,
        steps,
    )


if __name__ == "__main__":
    main()
