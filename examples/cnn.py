"""Train a small CNN on scikit-learn's 8x8 digits, loading batches on a thread while each
backward pass is awaited.

The model is two convolutions with batch normalisation, max pooling and dropout, then two linear
layers. Batches come from `aa.utils.data.DataLoader` with `async for`: a thread gathers and
shuffles the next batches while the training coroutine awaits `loss.backward_async()` on the
device's worker. Each epoch ends with an evaluation on the 360 held-out images, in eval mode
(batch norm uses its running statistics, dropout is off).

Run it (about half a minute on two cores; `--check` makes the exit status fail below 98%):

    python examples/cnn.py                       # cuda:0 if a GPU is present, else sim:0
    python examples/cnn.py --device cpu --epochs 4
    python examples/cnn.py --trace cnn.json      # open in https://ui.perfetto.dev
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass

import numpy as np
from _cli import default_device, run_and_report
from _data import accuracy, load_digits
from threadpoolctl import threadpool_limits

import autograd_async as aa
from autograd_async import nn
from autograd_async.profiler import profile
from autograd_async.utils.data import DataLoader, TensorDataset
from autograd_async.utils.malloc import retain_freed_memory

TARGET_ACCURACY = 0.98
TARGET_PERCENT = round(TARGET_ACCURACY * 100)


def cnn(width: int = 32) -> nn.Sequential:
    """1x8x8 image -> 10 logits: conv-bn-relu twice, 2x2 max pooling, dropout, two linears."""
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, width, 3, padding=1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
        nn.BatchNorm2d(2 * width),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Flatten(),
        nn.Linear(2 * width * 16, 128),
        nn.ReLU(),
        nn.Dropout(0.25),
        nn.Linear(128, 10),
    )


@dataclass
class Result:
    """The final test accuracy, the time training took, and each epoch's test accuracy."""

    test_accuracy: float
    seconds: float
    device: str
    history: list[float]
    model: nn.Module


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; `parse_args([])` gives the defaults."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device",
        default=None,
        help="cpu, sim:N or cuda:N (default: cuda:0 with a GPU, else sim:0)",
    )
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3, help="AdamW learning rate")
    parser.add_argument("--width", type=int, default=32, help="channels of the first convolution")
    parser.add_argument("--seed", type=int, default=0, help="weight init, dropout and shuffling")
    parser.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace of training")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit with status 1 if test accuracy is below {TARGET_PERCENT}%%",
    )
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.width < 1:
        parser.error("--epochs, --batch-size and --width must be at least 1")
    return args


def evaluate(model: nn.Module, x: aa.Tensor, y: aa.Tensor) -> float:
    """Test accuracy in eval mode, without recording a graph."""
    model.eval()
    with aa.no_grad():
        score = accuracy(model(x), y)
    model.train()
    return score


async def train(args: argparse.Namespace) -> Result:
    """Train as `args` says; returns the final test accuracy and the model."""
    device = args.device or default_device()
    data = load_digits().standardised()
    aa.manual_seed(args.seed)
    model = cnn(args.width).to(device)
    optimizer = aa.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    steps_per_epoch = -(-len(data.x_train) // args.batch_size)
    schedule = aa.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=steps_per_epoch
    )
    criterion = nn.CrossEntropyLoss()
    train_set = TensorDataset(
        aa.tensor(data.x_train, device=device), aa.tensor(data.y_train, device=device)
    )
    loader = DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, generator=aa.Generator(args.seed)
    )
    x_test = aa.tensor(data.x_test, device=device)
    y_test = aa.tensor(data.y_test, device=device)
    history = []
    began = time.perf_counter()
    tracing = profile() if args.trace else contextlib.nullcontext()
    # Forward runs on this thread and backward on the device worker: one BLAS thread each keeps
    # them from fighting over the two cores.
    with threadpool_limits(limits=1, user_api="blas"), tracing as prof:
        for epoch in range(1, args.epochs + 1):
            losses = []
            async for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                await loss.backward_async()  # the loader's thread builds the next batch meanwhile
                optimizer.step()
                schedule.step()
                losses.append(loss.item())
            history.append(evaluate(model, x_test, y_test))
            if not args.quiet:
                print(
                    f"epoch {epoch:3d}  loss {np.mean(losses):.4f}  "
                    f"test accuracy {history[-1]:.2%}",
                    flush=True,
                )
    seconds = time.perf_counter() - began
    if args.trace:
        prof.export_chrome_trace(args.trace)
    return Result(history[-1], seconds, device, history, model)


def main(argv: list[str] | None = None) -> int:
    """Run from the command line; the exit status is 1 when `--check` fails."""
    return run_and_report(
        train,
        parse_args(argv),
        lambda result: (
            f"test accuracy {result.test_accuracy:.2%} after {len(result.history)} "
            f"epochs in {result.seconds:.1f} s on {result.device}"
        ),
        lambda result: result.test_accuracy,
        TARGET_ACCURACY,
        "test accuracy",
    )


if __name__ == "__main__":
    # An application's choice, process-wide: NumPy's large temporaries reuse freed heap memory
    # instead of faulting in fresh pages every step (see autograd_async.utils.malloc).
    retain_freed_memory()
    sys.exit(main())
