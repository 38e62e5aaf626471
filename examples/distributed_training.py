"""Parameter-server style training on two worker processes, checked against a local run.

The model is an MLP for scikit-learn's digits (8x8 images, 10 classes, shipped with
scikit-learn: nothing is downloaded):

    x -> [w1: Linear(64, 32), Tanh] -> [w2: Linear(32, 10)] -> cross entropy (here, locally)

The example starts the two workers itself (`python -m autograd_async.workers` on loopback, with a temporary
token file), builds the two remote modules with the same initial weights as a local copy of the
model, and trains both on the same batches with SGD: the local model with `optim.SGD`, the
remote one with a `DistributedOptimizer` that steps the parameters where they live. It prints
both loss curves and exits 0 when they agree within the tolerance, 1 otherwise.

    python examples/distributed_training.py [--epochs 3] [--batch-size 64]

With `--ray` the two workers are Ray actors instead (`autograd_async.workers.ray.RayWorkers`, needs
`pip install 'autograd-async[ray]'`): on the Ray cluster this machine has joined (`ray start`,
or RAY_ADDRESS), else on a local Ray. Across nodes the workers listen on their node's address,
which needs TLS (`--tls-cert/--tls-key/--tls-ca`, paths present on every node) or `--insecure`.

    python examples/distributed_training.py --ray [--tls-cert C --tls-key K --tls-ca CA]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import autograd_async as ag  # noqa: E402
from autograd_async import distributed as dist  # noqa: E402
from autograd_async import nn, optim  # noqa: E402

Data = tuple[np.ndarray, np.ndarray]


def load_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Digits as float32 features in [0, 1] and int64 labels, shuffled once."""
    from sklearn.datasets import load_digits  # noqa: PLC0415 - optional dependency

    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.target))
    features = (digits.data[order] / 16.0).astype(np.float32)
    return features, digits.target[order].astype(np.int64)


def batches(n: int, batch_size: int, epochs: int, seed: int) -> list[np.ndarray]:
    """The index batches of every epoch (the same for both runs)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(epochs):
        order = rng.permutation(n)
        out += [order[i : i + batch_size] for i in range(0, n, batch_size)]
    return out


def start_workers(token_file: Path) -> dict[str, tuple[subprocess.Popen, str]]:
    """Start w1 and w2 on loopback; return their processes and addresses (from READY)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = {}
    for name in ("w1", "w2"):
        cmd = [
            sys.executable,
            "-m",
            "autograd_async.workers",
            "--listen",
            "127.0.0.1:0",
            "--name",
            name,
            "--devices",
            "cpu",
            "--token-file",
            str(token_file),
        ]
        procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    workers = {}
    for name, proc in procs.items():
        line = proc.stdout.readline().split()
        if len(line) != 3 or line[0] != "READY":
            for p in procs.values():
                p.kill()
            raise SystemExit(f"worker {name} did not start")
        workers[name] = (proc, line[2])
    return workers


def train_local(
    first: nn.Module, second: nn.Module, data: Data, plan: list[np.ndarray], lr: float
) -> list[float]:
    """The reference: the same model, batches and SGD, all in this process."""
    features, labels = data
    opt = optim.SGD([*first.parameters(), *second.parameters()], lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for idx in plan:
        x, y = ag.tensor(features[idx]), ag.tensor(labels[idx])
        opt.zero_grad()
        loss = loss_fn(second(first(x)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


async def train_distributed(
    client: dist.Client,
    first: nn.Module,
    second: nn.Module,
    data: Data,
    plan: list[np.ndarray],
    lr: float,
) -> tuple[list[float], float]:
    """Layer 1 on w1, layer 2 on w2, loss here; a DistributedOptimizer steps both workers.
    Returns the losses and the seconds the training took."""
    features, labels = data
    layer1 = await dist.RemoteModule.create(
        client,
        "w1",
        "Sequential",
        layers=[["Linear", {"in_features": 64, "out_features": 32}], ["Tanh", {}]],
    )
    layer2 = await dist.RemoteModule.create(client, "w2", "Linear", in_features=32, out_features=10)
    await layer1.load_state_dict(first.state_dict())  # the same initial weights
    await layer2.load_state_dict(second.state_dict())
    opt = dist.DistributedOptimizer(
        optim.SGD, layer1.parameter_refs() + layer2.parameter_refs(), lr=lr
    )
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    started = time.perf_counter()
    for idx in plan:
        x, y = ag.tensor(features[idx]), ag.tensor(labels[idx])
        async with dist.context(client) as ctx:
            loss = loss_fn(await layer2(await layer1(x)), y)
            await dist.backward(ctx, [loss])
            await opt.step(ctx)
        losses.append(loss.item())
    return losses, time.perf_counter() - started


async def train_on_processes(
    workers: dict, token: bytes, *model_and_data: Any
) -> tuple[list[float], float]:
    """Train on the worker processes started by `start_workers`."""
    addresses = {name: address for name, (_, address) in workers.items()}
    async with dist.Client(addresses, token=token, timeout=30.0) as client:
        return await train_distributed(client, *model_and_data)


async def train_on_ray(args: argparse.Namespace, *model_and_data: Any) -> tuple[list[float], float]:
    """Start w1 and w2 as Ray actors (spread over the nodes), train on them, stop them."""
    from autograd_async.workers.ray import RayWorkers  # noqa: PLC0415 - Ray is optional

    tls = None
    if args.tls_cert is not None:
        tls = (args.tls_cert, args.tls_key, args.tls_ca)
    async with await RayWorkers.start(
        n=2, names=["w1", "w2"], devices="cpu", strategy="SPREAD", tls=tls, insecure=args.insecure
    ) as cluster:
        print(f"Ray workers: {cluster.addresses}")
        async with await cluster.client(timeout=30.0) as client:
            return await train_distributed(client, *model_and_data)


def run_on_processes(
    model: tuple[nn.Module, nn.Module], data: Data, plan: list[np.ndarray], lr: float
) -> tuple[list[float], float]:
    """Start two worker processes on loopback, train on them, stop them."""
    token = secrets.token_hex(16).encode()
    with tempfile.TemporaryDirectory() as tmp:
        token_file = Path(tmp) / "token"
        token_file.write_bytes(token)
        token_file.chmod(0o600)
        workers = start_workers(token_file)
        try:
            return asyncio.run(train_on_processes(workers, token, *model, data, plan, lr))
        finally:
            for proc, _ in workers.values():
                proc.terminate()
            for proc, _ in workers.values():
                proc.wait(15)


def main(argv: list[str] | None = None) -> int:
    """Train both ways, print the curves, exit 0 when they match."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1e-4,
        help="largest allowed difference between the two loss curves",
    )
    parser.add_argument(
        "--ray",
        action="store_true",
        help="run the two workers as Ray actors (on the cluster this machine "
        "joined, else on a local Ray)",
    )
    parser.add_argument(
        "--tls-cert", help="with --ray: each worker's certificate (PEM path on every node)"
    )
    parser.add_argument("--tls-key", help="with --ray: the private key of --tls-cert")
    parser.add_argument(
        "--tls-ca",
        help="with --ray: CA of the workers' certificates; also required of clients (mutual TLS)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="with --ray across nodes: plaintext frames on the network",
    )
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    if not args.ray and (args.tls_cert or args.tls_ca or args.insecure):
        parser.error("--tls-cert, --tls-key, --tls-ca and --insecure apply to --ray workers")

    data = load_data(args.seed)
    plan = batches(len(data[1]), args.batch_size, args.epochs, args.seed)

    def model() -> tuple[nn.Module, nn.Module]:
        """The model, initialised from the seed (the same weights every time)."""
        ag.manual_seed(args.seed)
        return nn.Sequential(nn.Linear(64, 32), nn.Tanh()), nn.Linear(32, 10)

    started = time.perf_counter()
    local = train_local(*model(), data, plan, args.lr)
    local_s = time.perf_counter() - started

    if args.ray:
        try:
            remote, remote_s = asyncio.run(train_on_ray(args, *model(), data, plan, args.lr))
        except ImportError as exc:  # Ray is not installed: say how to get it
            print(exc, file=sys.stderr)
            return 1
    else:
        remote, remote_s = run_on_processes(model(), data, plan, args.lr)

    steps_per_epoch = -(-len(data[1]) // args.batch_size)
    print(f"{'epoch':>5} {'local loss':>12} {'distributed':>12} {'max |diff|':>11}")
    for epoch in range(args.epochs):
        part = slice(epoch * steps_per_epoch, (epoch + 1) * steps_per_epoch)
        a, b = np.array(local[part]), np.array(remote[part])
        print(f"{epoch + 1:>5} {a.mean():>12.6f} {b.mean():>12.6f} {np.abs(a - b).max():>11.2e}")
    diff = float(np.abs(np.array(local) - np.array(remote)).max())
    print(
        f"{len(plan)} steps: local {local_s:.2f} s, distributed {remote_s:.2f} s "
        f"({1e3 * remote_s / len(plan):.1f} ms/step); first loss {local[0]:.4f}, "
        f"last {local[-1]:.4f}"
    )
    if diff <= args.tolerance and local[-1] < local[0]:
        print(f"loss curves match (max difference {diff:.2e} <= {args.tolerance:g})")
        return 0
    print(f"loss curves differ: max difference {diff:.2e} > {args.tolerance:g}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
