"""Train a digit classifier while the next batches are prepared during each awaited backward pass.

An MLP learns scikit-learn's 8x8 handwritten digits (1,797 images shipped with the package). The
training loop awaits `loss.backward_async()`: the backward pass runs on the device's worker thread,
and the event loop is free meanwhile. Batches come from `aa.utils.data.DataLoader` through
`async for`: its thread shuffles, slices and builds the next batches while the training coroutine
runs and awaits, at most PREFETCH ahead. Each epoch ends with an evaluation on the held-out test
images, under `aa.no_grad()`.

Run it (about 5 s on two cores; `--check` makes the exit status fail below 95% test accuracy):

    python examples/async_training.py                      # cuda:0 if a GPU is present, else sim:0
    python examples/async_training.py --device cpu --epochs 5
    python examples/async_training.py --trace train.json   # open in https://ui.perfetto.dev
    python examples/async_training.py --check --quiet

From code: `result = asyncio.run(train(parse_args(["--epochs", "2"])))`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from _cli import default_device, run_and_report
from _data import Digits, accuracy, load_digits, mlp
from threadpoolctl import threadpool_limits
from tqdm import tqdm

import autograd_async as aa
from autograd_async import nn
from autograd_async.profiler import profile
from autograd_async.utils.data import DataLoader

TARGET_ACCURACY = 0.95
# How many prepared batches may wait: enough that the training loop never waits for the loader,
# few enough that a slow consumer does not make the loader hold the whole epoch.
PREFETCH = 4


@dataclass(frozen=True)
class Batch:
    """Inputs and labels of one batch, already on the training device."""

    x: aa.Tensor
    y: aa.Tensor


@dataclass(frozen=True)
class EpochStats:
    """How one epoch went: mean training loss and accuracy, then test accuracy."""

    epoch: int
    train_loss: float
    train_accuracy: float
    test_accuracy: float

    def __str__(self) -> str:
        return (
            f"epoch {self.epoch:3d}  loss {self.train_loss:.4f}  train accuracy "
            f"{self.train_accuracy:.2%}  test accuracy {self.test_accuracy:.2%}"
        )


@dataclass
class Result:
    """What `train` returns: the final test accuracy, the time it took and the trained model."""

    test_accuracy: float
    seconds: float
    device: str
    model: nn.Module
    history: list[EpochStats] = field(default_factory=list)
    trace: str | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; `parse_args([])` gives the defaults."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device",
        default=None,
        help="cpu, sim:N or cuda:N (default: cuda:0 with a GPU, else sim:0)",
    )
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (momentum 0.9)")
    parser.add_argument("--hidden", type=int, default=128, help="width of the two hidden layers")
    parser.add_argument("--seed", type=int, default=0, help="weight init and shuffling")
    parser.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace of training")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or epoch lines")
    parser.add_argument(
        "--check",
        action="store_true",
        # %% because argparse %-formats help strings
        help=f"exit with status 1 if test accuracy is below {TARGET_ACCURACY:.0%}%",
    )
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1:
        parser.error("--epochs and --batch-size must be at least 1")
    return args


# ------------------------------------------------------------------------------------- loading
def make_batch(data: Digits, rows: np.ndarray, device: str) -> Batch:
    """Gather `rows` of the training set into tensors on `device`."""
    return Batch(
        aa.tensor(data.x_train[rows], device=device),
        aa.tensor(data.y_train[rows], device=device),
    )


def batch_loader(data: Digits, args: argparse.Namespace, device: str) -> DataLoader:
    """Shuffled batches of the training set (a new order every epoch), built on a thread.

    The dataset is the row numbers; `make_batch`, the collate function, gathers the rows of a
    batch into tensors on the device at once, which is faster than one sample at a time.
    """
    return DataLoader(
        range(len(data.x_train)),
        batch_size=args.batch_size,
        shuffle=True,
        generator=aa.Generator(args.seed),
        collate_fn=lambda rows: make_batch(data, np.asarray(rows), device),
        prefetch=PREFETCH,
    )


# ------------------------------------------------------------------------------------ training
async def train_step(
    model: nn.Module, optimizer: aa.optim.Optimizer, criterion: nn.Module, batch: Batch
) -> tuple[float, float]:
    """One SGD step on `batch`; returns its loss and accuracy."""
    optimizer.zero_grad()
    logits = model(batch.x)
    loss = criterion(logits, batch.y)
    # The device worker runs backward while this task is suspended; the loader's thread keeps
    # building the next batches meanwhile.
    await loss.backward_async()
    optimizer.step()
    return loss.item(), accuracy(logits, batch.y)


def evaluate(model: nn.Module, x: np.ndarray, y: np.ndarray, device: str) -> float:
    """Accuracy of `model` on a whole split, without recording a graph."""
    model.eval()
    with aa.no_grad():
        score = accuracy(model(aa.tensor(x, device=device)), aa.tensor(y, device=device))
    model.train()
    return score


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Let each NumPy matmul use one core.

    The forward pass (this thread) and the backward pass (the device worker) already keep two
    cores busy; a multithreaded BLAS on top spins its own threads against them, which makes these
    small matmuls several times slower, not faster.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        yield


async def run_epoch(
    loader: DataLoader,
    model: nn.Module,
    optimizer: aa.optim.Optimizer,
    criterion: nn.Module,
    bar: tqdm,
) -> tuple[float, float]:
    """Train on one epoch's batches from the loader; returns the mean loss and accuracy."""
    losses, accuracies = [], []
    async for batch in loader:  # the loader's thread builds the next batches meanwhile
        loss, acc = await train_step(model, optimizer, criterion, batch)
        losses.append(loss)
        accuracies.append(acc)
        bar.set_postfix(
            loss=f"{np.mean(losses):.3f}", acc=f"{np.mean(accuracies):.2%}", refresh=False
        )
        bar.update()
    return float(np.mean(losses)), float(np.mean(accuracies))


async def train(args: argparse.Namespace) -> Result:
    """Train on the digits as `args` says; returns the final test accuracy and the model."""
    device = args.device or default_device()
    data = load_digits().standardised()
    aa.manual_seed(args.seed)
    loader = batch_loader(data, args, device)
    model = mlp(args.hidden).to(device)
    optimizer = aa.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    steps = args.epochs * -(-len(data.x_train) // args.batch_size)
    history: list[EpochStats] = []

    began = time.perf_counter()
    tracing = profile(record_forward=True) if args.trace else contextlib.nullcontext()
    bar = tqdm(total=steps, unit="batch", disable=args.quiet, leave=False, file=sys.stderr)
    with one_blas_thread(), tracing as prof, bar:
        for epoch in range(1, args.epochs + 1):
            bar.set_description(f"epoch {epoch}/{args.epochs}")
            loss, acc = await run_epoch(loader, model, optimizer, criterion, bar)
            test_acc = evaluate(model, data.x_test, data.y_test, device)
            history.append(EpochStats(epoch, loss, acc, test_acc))
            if not args.quiet:
                bar.write(str(history[-1]))
    seconds = time.perf_counter() - began
    if args.trace:
        prof.export_chrome_trace(args.trace)
    return Result(history[-1].test_accuracy, seconds, device, model, history, args.trace)


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
    sys.exit(main())
