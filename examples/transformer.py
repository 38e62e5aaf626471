"""Train a small transformer encoder to sort (or reverse) sequences of digits, awaiting each
backward pass while a loader thread prepares the next batches.

Each sample is a random sequence of digits; the target is the same digits sorted (`--task sort`,
the default) or reversed (`--task reverse`). The model embeds tokens and positions, runs a
bidirectional `TransformerEncoder` (multi-head self-attention, pre-norm layers) and predicts a
digit per position: to sort, each position must count how many digits are smaller than each
candidate, which attention over the whole sequence can do. Data is generated, never downloaded.
Accuracy is the share of tokens right on a fixed held-out set.

Run it (about a minute on two cores; `--check` makes the exit status fail below 95%):

    python examples/transformer.py                     # cuda:0 if a GPU is present, else sim:0
    python examples/transformer.py --device cpu --steps 300
    python examples/transformer.py --trace attn.json   # backward on the device tracks, in Perfetto
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from dataclasses import dataclass

import numpy as np
from _cli import default_device, run_and_report
from threadpoolctl import threadpool_limits

import autograd_async as aa
from autograd_async import nn
from autograd_async.profiler import profile
from autograd_async.utils.data import DataLoader, IterableDataset
from autograd_async.utils.malloc import retain_freed_memory

TARGET_ACCURACY = 0.95
TARGET_PERCENT = round(TARGET_ACCURACY * 100)
VOCAB = 10


TASKS = {
    "sort": lambda tokens: np.sort(tokens, axis=1),
    "reverse": lambda tokens: tokens[:, ::-1].copy(),
}


def make_batch(
    task: str, rng: np.random.Generator, size: int, length: int
) -> tuple[np.ndarray, np.ndarray]:
    """`size` random digit sequences and their targets, int64 (size, length)."""
    tokens = rng.integers(0, VOCAB, (size, length))
    return tokens, TASKS[task](tokens)


class Sequences(IterableDataset):
    """An endless stream of (sequence, target) pairs, from its own seeded generator."""

    def __init__(self, task: str, length: int, seed: int) -> None:
        self.task = task
        self.length = length
        self.seed = seed

    def __iter__(self):  # noqa: ANN204
        rng = np.random.default_rng(self.seed)
        while True:
            tokens, target = make_batch(self.task, rng, 256, self.length)
            yield from zip(tokens, target, strict=True)


class SequenceModel(nn.Module):
    """Token and position embeddings, a pre-norm transformer encoder, a per-position readout."""

    def __init__(self, length: int, width: int, heads: int, layers: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, width)
        self.positions = nn.Embedding(length, width)
        layer = nn.TransformerEncoderLayer(
            width,
            heads,
            dim_feedforward=2 * width,
            dropout=0.0,
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(width))
        self.readout = nn.Linear(width, VOCAB)
        self.register_buffer("where", aa.arange(length), persistent=False)

    def forward(self, tokens: aa.Tensor) -> aa.Tensor:
        """Logits (N, L, VOCAB) for a batch of token sequences (N, L)."""
        x = self.tokens(tokens) + self.positions(self.where)
        return self.readout(self.encoder(x))


@dataclass
class Result:
    """The held-out token accuracy, the time training took, and the accuracy after each round."""

    accuracy: float
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
    parser.add_argument("--task", choices=sorted(TASKS), default="sort")
    parser.add_argument("--steps", type=int, default=400, help="training steps")
    parser.add_argument("--length", type=int, default=8, help="digits per sequence")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=64, help="model width (d_model)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3, help="peak AdamW learning rate")
    parser.add_argument("--seed", type=int, default=0, help="weight init and data")
    parser.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace of training")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit with status 1 if accuracy is below {TARGET_PERCENT}%%",
    )
    args = parser.parse_args(argv)
    if min(args.steps, args.length, args.batch_size, args.width, args.heads, args.layers) < 1:
        parser.error("--steps, --length, --batch-size, --width, --heads, --layers must be >= 1")
    if args.width % args.heads:
        parser.error("--width must be a multiple of --heads")
    return args


def token_accuracy(model: nn.Module, tokens: aa.Tensor, target: aa.Tensor) -> float:
    """The share of positions whose most likely digit is the target's."""
    model.eval()
    with aa.no_grad():
        predicted = model(tokens).argmax(dim=-1)
    model.train()
    return (predicted == target).float().mean().item()


async def train(args: argparse.Namespace) -> Result:
    """Train as `args` says; returns the held-out accuracy and the model."""
    device = args.device or default_device()
    aa.manual_seed(args.seed)
    model = SequenceModel(args.length, args.width, args.heads, args.layers).to(device)
    optimizer = aa.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = aa.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=args.steps, pct_start=0.1
    )
    criterion = nn.CrossEntropyLoss()
    held_out = make_batch(args.task, np.random.default_rng(10_000 + args.seed), 1000, args.length)
    test_tokens, test_target = (aa.tensor(a, device=device) for a in held_out)
    loader = DataLoader(
        Sequences(args.task, args.length, args.seed), batch_size=args.batch_size, prefetch=4
    )
    history = []
    every = max(1, args.steps // 6)
    began = time.perf_counter()
    tracing = profile() if args.trace else contextlib.nullcontext()
    with threadpool_limits(limits=1, user_api="blas"), tracing as prof:
        batches = aiter(loader)
        async with batches:
            for step in range(1, args.steps + 1):
                tokens, target = (t.to(device) for t in await anext(batches))
                optimizer.zero_grad()
                logits = model(tokens)
                loss = criterion(logits.reshape((-1, VOCAB)), target.reshape(-1))
                await loss.backward_async()  # the loader thread makes the next batches meanwhile
                optimizer.step()
                schedule.step()
                if step % every == 0 or step == args.steps:
                    history.append(token_accuracy(model, test_tokens, test_target))
                    if not args.quiet:
                        print(
                            f"step {step:5d}  loss {loss.item():.4f}  "
                            f"held-out token accuracy {history[-1]:.2%}",
                            flush=True,
                        )
    seconds = time.perf_counter() - began
    if args.trace:
        prof.export_chrome_trace(args.trace)
    return Result(history[-1], seconds, device, history, model)


def main(argv: list[str] | None = None) -> int:
    """Run from the command line; the exit status is 1 when `--check` fails."""
    args = parse_args(argv)
    return run_and_report(
        train,
        args,
        lambda result: (
            f"held-out token accuracy {result.accuracy:.2%} after {args.steps} steps "
            f"in {result.seconds:.1f} s on {result.device}"
        ),
        lambda result: result.accuracy,
        TARGET_ACCURACY,
        "accuracy",
    )


if __name__ == "__main__":
    # An application's choice, process-wide: NumPy's large temporaries reuse freed heap memory
    # instead of faulting in fresh pages every step (see autograd_async.utils.malloc).
    retain_freed_memory()
    sys.exit(main())
