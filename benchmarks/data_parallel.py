"""Data-parallel training: our DistributedDataParallel on MPI beside PyTorch's DDP on gloo.

    python benchmarks/data_parallel.py              # MLP 784-1024-1024-10, batch 256, 1 and 2 ranks
    python benchmarks/data_parallel.py --quick      # tiny sizes (the smoke test)

Every rank is a process started by `mpiexec` with one BLAS thread. For each world size the report
gives steps/s of ours and of PyTorch, the scaling of 2 ranks over 1, and the share of the
all_reduce time hidden behind backward: (local step + all_reduce alone - DDP step) / all_reduce
alone, where the local step is the same step without DDP and the all_reduce alone reduces the
same gradient bytes after backward. The bucket timeline gives the share a second way: of the time
some bucket's all_reduce was in flight, the part before the last gradient was accumulated (the
median over the DDP steps, rank 0). The large-model case reduces >= 50 M float32 gradients the way
DDP does (25 MB buckets, all in flight) against MPI's raw `Allreduce` of the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _timing import limit_blas_threads, machine_line, median, use_repository_checkout

HERE = Path(__file__).resolve()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    p.add_argument("--steps", type=int, default=30, help="timed steps per repeat")
    p.add_argument("--repeats", type=int, default=3, help="repeats (the median is reported)")
    p.add_argument(
        "--large-params",
        type=int,
        default=50_000_000,
        help="gradient elements of the large-model case",
    )
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--widths", default="784,1024,1024,10", help="MLP layer widths")
    p.add_argument("--batch", type=int, default=256, help="global batch")
    p.add_argument(
        "--bucket-cap-mb",
        type=float,
        default=25.0,
        help="DDP bucket cap, ours and torch's (PyTorch's default: 25)",
    )
    return p.parse_args(argv)


# ------------------------------------------------------------------------------ workers
def rank_and_size() -> tuple[int, int]:
    return int(os.environ.get("PMI_RANK", "0")), int(os.environ.get("PMI_SIZE", "1"))


def timed_steps(step, steps: int, repeats: int) -> float:
    """Median seconds per step over `repeats` runs of `steps` steps (after a warm-up)."""
    for _ in range(3):
        step()
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(steps):
            step()
        runs.append((time.perf_counter() - started) / steps)
    return median(runs)


def worker_ours(args: argparse.Namespace) -> dict:
    import numpy as np  # noqa: PLC0415 - after the BLAS thread limit

    use_repository_checkout()
    import autograd_async as aa  # noqa: PLC0415
    import autograd_async.distributed as dist  # noqa: PLC0415
    from autograd_async import nn  # noqa: PLC0415

    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    widths = [int(w) for w in args.widths.split(",")]
    layers: list = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    rng = np.random.default_rng(rank)
    per_rank = args.batch // size
    x = aa.tensor(rng.normal(size=(per_rank, widths[0])).astype(np.float32))
    y = aa.tensor(rng.integers(0, widths[-1], per_rank))
    loss_fn = nn.CrossEntropyLoss()
    opt = aa.optim.SGD(model.parameters(), lr=1e-3)

    shares: list[float] = []

    def step(net):
        def run() -> None:
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
            if net is ddp and ddp.reducer.last_timeline is not None:
                shares.append(ddp.reducer.last_timeline.hidden_share())

        return run

    ddp_step = timed_steps(step(ddp), args.steps, args.repeats)
    timeline_hidden = median(shares)
    local_step = timed_steps(step(model), args.steps, args.repeats)
    flat = aa.zeros(sum(p.numel() for p in model.parameters()))

    def reduce_alone() -> None:
        dist.all_reduce(flat)

    comm = timed_steps(reduce_alone, args.steps, args.repeats)
    dist.barrier()
    dist.destroy_process_group()
    return {
        "rank": rank,
        "size": size,
        "ddp_step": ddp_step,
        "local_step": local_step,
        "comm": comm,
        "timeline_hidden": timeline_hidden,
        "buckets": len(ddp.reducer.buckets),
    }


def worker_torch(args: argparse.Namespace) -> dict:
    import torch  # noqa: PLC0415 - only in this worker
    import torch.distributed as tdist  # noqa: PLC0415

    torch.set_num_threads(1)
    rank, size = rank_and_size()
    tdist.init_process_group("gloo", rank=rank, world_size=size)
    torch.manual_seed(0)
    widths = [int(w) for w in args.widths.split(",")]
    layers: list = []
    for a, b in zip(widths, widths[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    per_rank = args.batch // size
    x = torch.randn(per_rank, widths[0])
    y = torch.randint(0, widths[-1], (per_rank,))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> None:
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()

    ddp_step = timed_steps(step, args.steps, args.repeats)
    tdist.barrier()
    tdist.destroy_process_group()
    return {"rank": rank, "size": size, "ddp_step": ddp_step}


def worker_large(args: argparse.Namespace) -> dict:
    import numpy as np  # noqa: PLC0415 - after the BLAS thread limit

    use_repository_checkout()
    import autograd_async as aa  # noqa: PLC0415
    import autograd_async.distributed as dist  # noqa: PLC0415

    dist.init_process_group("mpi")
    from mpi4py import MPI  # noqa: PLC0415 - the reference

    n = args.large_params
    bucket = 25 * 1024 * 1024 // 4
    parts = [aa.zeros(min(bucket, n - at)) for at in range(0, n, bucket)]
    raw = np.zeros(n, dtype=np.float32)
    comm = MPI.COMM_WORLD

    def ours() -> None:
        works = [dist.all_reduce(p, op=dist.ReduceOp.AVG, async_op=True) for p in parts]
        for w in works:
            w.wait()

    def reference() -> None:
        comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)
        np.divide(raw, comm.Get_size(), out=raw)

    reps = max(2, args.repeats)
    ours_s = timed_steps(ours, 1, reps)
    raw_s = timed_steps(reference, 1, reps)
    dist.destroy_process_group()
    return {"rank": comm.Get_rank(), "ours": ours_s, "raw": raw_s, "bytes": 4 * n}


# ------------------------------------------------------------------------------- driver
def launch(kind: str, ranks: int, args: argparse.Namespace) -> dict:
    mpiexec = str(Path(sys.executable).with_name("mpiexec"))
    if not Path(mpiexec).exists():
        mpiexec = "mpiexec"
    forwarded = [
        "--steps",
        str(args.steps),
        "--repeats",
        str(args.repeats),
        "--large-params",
        str(args.large_params),
        "--widths",
        args.widths,
        "--batch",
        str(args.batch),
        "--bucket-cap-mb",
        str(args.bucket_cap_mb),
    ]
    env = dict(
        os.environ,
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(29500 + os.getpid() % 400),
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    done = subprocess.run(
        [mpiexec, "-n", str(ranks), sys.executable, str(HERE), "--worker", kind, *forwarded],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind} on {ranks} ranks failed:\n{done.stdout}\n{done.stderr}")
    results = [
        json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT ")
    ]
    return results[0]


def main() -> None:
    args = parse()
    if args.worker:
        limit_blas_threads(1)
        result = {"ours": worker_ours, "torch": worker_torch, "large": worker_large}[args.worker](
            args
        )
        if result.get("rank", 0) == 0:  # one line: the ranks' stdout arrive interleaved
            print("RESULT " + json.dumps(result), flush=True)
        return
    if args.quick:
        args.steps, args.repeats, args.large_params = 3, 1, 100_000
        args.widths, args.batch = "64,32,10", 16
    print(machine_line())
    print(
        f"MLP {args.widths.replace(',', '-')}, float32, global batch {args.batch}, "
        f"one BLAS thread per rank, buckets of {args.bucket_cap_mb:g} MB; median of "
        f"{args.repeats} x {args.steps} steps"
    )
    table = {}
    for ranks in (2,) if args.quick else (1, 2):  # --quick: the fewest launches that run it all
        ours = launch("ours", ranks, args)
        theirs = launch("torch", ranks, args)
        table[ranks] = (ours, theirs)
        hidden = (ours["local_step"] + ours["comm"] - ours["ddp_step"]) / ours["comm"]
        print(
            f"{ranks} rank(s): ours {1 / ours['ddp_step']:7.1f} steps/s | torch DDP gloo "
            f"{1 / theirs['ddp_step']:7.1f} steps/s | ours / torch "
            f"{theirs['ddp_step'] / ours['ddp_step']:.2f} | local step "
            f"{ours['local_step'] * 1e3:.1f} ms, all_reduce alone {ours['comm'] * 1e3:.2f} ms, "
            f"hidden {min(max(hidden, 0.0), 1.0):.0%} (by step times), "
            f"{ours['timeline_hidden']:.0%} (bucket timeline, {ours['buckets']} buckets)"
        )
    if 1 in table:
        ours_scaling = table[1][0]["ddp_step"] / table[2][0]["ddp_step"]
        torch_scaling = table[1][1]["ddp_step"] / table[2][1]["ddp_step"]
        print(f"scaling 2 ranks vs 1: ours {ours_scaling:.2f}x, torch {torch_scaling:.2f}x")
    large = launch("large", 2, args)
    print(
        f"large model: {large['bytes'] / 1e6:.0f} MB of gradients on 2 ranks: ours "
        f"{large['ours'] * 1e3:.1f} ms, raw MPI Allreduce {large['raw'] * 1e3:.1f} ms, "
        f"ours / raw MPI (speed) {large['raw'] / large['ours']:.2f}"
    )
    print(
        "target: ours / torch >= 1.0 at 2 ranks; scaling >= 1.7x; >= 50% hidden; "
        "large model >= 0.9 of raw MPI"
    )


if __name__ == "__main__":
    main()
