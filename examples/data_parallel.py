"""Train the digits classifier data-parallel: one replica per rank, gradients averaged in backward.

Each rank reads its own share of every epoch (`DistributedSampler`), runs forward, and awaits
`loss.backward_async()`; `DistributedDataParallel` all-reduces each bucket of gradients as soon
as backward has produced it, while the rest of backward runs on, so the step that follows sees
the average over every rank. Two ways to run it:

    # two processes under MPI (the launcher wraps mpiexec; a failing rank stops the others)
    python -m autograd_async.distributed.run -n 2 examples/data_parallel.py

    # one process, one replica per device (the `threads` backend)
    python examples/data_parallel.py --devices sim:0,sim:1

Each rank prints its throughput; rank 0 prints the test accuracy, and the run checks that every
rank ends with the same parameters. With `--check` the exit status is 1 below 90% accuracy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
from _data import Standardise, accuracy, load_digits, mlp

import autograd_async as aa
import autograd_async.distributed as dist
from autograd_async import nn
from autograd_async.utils.data import DistributedSampler

TARGET_ACCURACY = 0.9


@dataclass
class RankReport:
    rank: int
    world: int
    device: str
    samples_per_s: float
    test_accuracy: float
    checksum: float


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="data_parallel.py",
        description="Train the digits MLP data-parallel with DistributedDataParallel.",
    )
    parser.add_argument(
        "--devices",
        default=None,
        help="one process, one replica per device (e.g. sim:0,sim:1); "
        "default: the ranks of the MPI launch, on cpu",
    )
    parser.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch (all ranks)")
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate")
    parser.add_argument("--seed", type=int, default=0, help="model and shuffle seed")
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 below {TARGET_ACCURACY:.0%}% test accuracy"
    )
    return parser.parse_args(argv)


async def train(rank: int, world: int, device: str, args: argparse.Namespace) -> RankReport:
    """One rank's training loop; its throughput, the test accuracy and a parameter checksum."""
    digits = load_digits()
    aa.manual_seed(args.seed)  # rank 0's initial parameters are copied to every rank anyway
    model = nn.Sequential(Standardise(digits.mean, digits.std), mlp()).to(device)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = aa.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    sampler = DistributedSampler(range(len(digits.x_train)), world, rank, seed=args.seed)
    per_rank = max(1, args.batch_size // world)
    samples, busy = 0, 0.0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        order = np.fromiter(sampler, dtype=np.int64)
        started = time.perf_counter()
        for at in range(0, len(order) - per_rank + 1, per_rank):
            rows = order[at : at + per_rank]
            x = aa.tensor(digits.x_train[rows], device=device)
            y = aa.tensor(digits.y_train[rows], device=device)
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            await loss.backward_async()  # returns once every bucket is averaged over the ranks
            opt.step()
            samples += len(rows)
        busy += time.perf_counter() - started
    with aa.no_grad():
        model.eval()
        logits = model(aa.tensor(digits.x_test, device=device))
        test = accuracy(logits, aa.tensor(digits.y_test, device=device))
    checksum = float(
        sum(p.detach().cpu().numpy().astype(np.float64).sum() for p in model.parameters())
    )
    return RankReport(rank, world, device, samples / busy, test, checksum)


def report(reports: list[RankReport]) -> int:
    for r in reports:
        print(f"rank {r.rank}/{r.world} on {r.device}: {r.samples_per_s:,.0f} samples/s")
    first = reports[0]
    print(
        f"test accuracy {first.test_accuracy:.1%} after data-parallel training "
        f"on {first.world} rank(s)"
    )
    if any(
        abs(r.checksum - first.checksum) > 1e-6 * max(1.0, abs(first.checksum)) for r in reports
    ):
        print("FAILED: the ranks' parameters differ", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.devices:
        devices = [d.strip() for d in args.devices.split(",") if d.strip()]
        reports = dist.spawn_threads(
            lambda rank: asyncio.run(train(rank, len(devices), devices[rank], args)), devices
        )
        status = report(reports)
    else:
        dist.init_process_group(
            "mpi" if dist.is_mpi_available() and _launched() else "threads",
            **({} if _launched() else {"rank": 0, "world_size": 1, "store": dist.HashStore()}),
        )
        mine = asyncio.run(train(dist.get_rank(), dist.get_world_size(), "cpu", args))
        everyone: list = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, mine.__dict__)
        status = report([RankReport(**r) for r in everyone]) if mine.rank == 0 else 0
        dist.destroy_process_group()
        first = everyone[0]
        if args.check and first["test_accuracy"] < TARGET_ACCURACY:
            status = 1
        return status
    if args.check and reports[0].test_accuracy < TARGET_ACCURACY:
        print(f"FAILED: accuracy is below the {TARGET_ACCURACY:.0%} target", file=sys.stderr)
        return 1
    return status


def _launched() -> bool:
    return any(name in os.environ for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"))


if __name__ == "__main__":
    sys.exit(main())
