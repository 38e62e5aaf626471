"""DistributedDataParallel against one process on the full batch, run by every rank.

Each rank builds the reference model itself (same seed) and trains it on the whole batch, so it
can compare its DDP replica with it: in float64 they agree to 1e-10.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np

import autograd_async as aa
import autograd_async.distributed as dist
import autograd_async.nn as nn
from autograd_async.utils.data import DistributedSampler

BATCH = 12
TOL = 1e-10


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(BATCH, 5)), rng.normal(size=(BATCH, 3))


# Thread ranks share the default generator: each seeds it and draws its model under this lock.
SEEDING = threading.Lock()


def mlp(norm: type | None = None) -> nn.Module:
    with SEEDING:
        aa.manual_seed(0)
        layers = [nn.Linear(5, 16)]
        if norm is not None:
            layers.append(norm(16))
        layers += [nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)]
        return nn.Sequential(*layers).to(dtype=aa.float64)


class WithUnused(nn.Module):
    """A model with a layer the loss never uses."""

    def __init__(self) -> None:
        super().__init__()
        with SEEDING:
            aa.manual_seed(1)
            self.used = nn.Linear(5, 3).to(dtype=aa.float64)
            self.unused = nn.Linear(5, 3).to(dtype=aa.float64)

    def forward(self, x: aa.Tensor, extra: bool = False) -> aa.Tensor:
        return self.used(x) + self.unused(x) if extra else self.used(x)


def loss_of(model: nn.Module, x: np.ndarray, y: np.ndarray, device: str) -> aa.Tensor:
    out = model(aa.tensor(x, device=device))
    return ((out - aa.tensor(y, device=device)) ** 2).mean()


def train_reference(model: nn.Module, steps: int, micro: int = 1) -> nn.Module:
    opt = aa.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = data(step)
        opt.zero_grad()
        for part in range(micro):
            rows = slice(part * BATCH // micro, (part + 1) * BATCH // micro)
            loss_of(model, x[rows], y[rows], "cpu").backward()
        opt.step()
    return model


def mine(array: np.ndarray, rank: int, size: int) -> np.ndarray:
    return np.array_split(array, size)[rank]


def train_ddp(
    ddp: nn.Module,
    rank: int,
    size: int,
    device: str,
    steps: int,
    micro: int = 1,
    use_async: bool = False,
) -> None:
    opt = aa.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = data(step)
        opt.zero_grad()
        for part in range(micro):
            rows = slice(part * BATCH // micro, (part + 1) * BATCH // micro)
            xs, ys = mine(x[rows], rank, size), mine(y[rows], rank, size)
            last = part == micro - 1
            if last:
                loss = loss_of(ddp, xs, ys, device)
            else:
                with ddp.no_sync():
                    loss = loss_of(ddp, xs, ys, device)
            if use_async:
                asyncio.run(loss.backward_async())
            elif last:
                loss.backward()
            else:
                with ddp.no_sync():
                    loss.backward()
        opt.step()


def assert_same(model: nn.Module, reference: nn.Module, what: str) -> None:
    for (name, got), want in zip(model.state_dict().items(), reference.state_dict().values()):
        diff = np.abs(got.cpu().numpy().astype(float) - want.cpu().numpy().astype(float)).max()
        assert diff <= TOL, f"{what}: {name} differs by {diff}"


def check_training(rank: int, size: int, device: str) -> None:
    """Plain, awaited and no_sync training give the full-batch parameters."""
    for use_async in (False, True):
        model = mlp().to(device)
        if rank != 0:  # construction copies rank 0's parameters to every rank
            with aa.no_grad():
                for p in model.parameters():
                    p.add_(1.0)
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
        assert len(ddp.reducer.buckets) >= 3
        train_ddp(ddp, rank, size, device, steps=3, use_async=use_async)
        assert_same(model, train_reference(mlp(), 3), f"training (async={use_async})")
    model = mlp().to(device)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
    train_ddp(ddp, rank, size, device, steps=2, micro=2)
    assert_same(model, train_reference(mlp(), 2, micro=2), "no_sync accumulation")
    assert list(ddp.state_dict())[:2] == ["module.0.weight", "module.0.bias"]
    assert ddp.module is model


def check_unused(rank: int, size: int, device: str) -> None:
    """Unused parameters: PyTorch's error by default, reduced fine when asked to find them."""
    ddp = nn.parallel.DistributedDataParallel(WithUnused().to(device))
    x, y = data(0)
    loss_of(ddp, mine(x, rank, size), mine(y, rank, size), device).backward()
    try:
        loss_of(ddp, mine(x, rank, size), mine(y, rank, size), device)
    except RuntimeError as exc:
        assert "Expected to have finished reduction in the prior iteration" in str(exc)
        assert f"did not receive grad for rank {rank}: 2 3" in str(exc), str(exc)
    else:
        raise AssertionError("an unused parameter went unnoticed")
    model = WithUnused().to(device)
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    train_ddp(ddp, rank, size, device, steps=2)
    assert model.unused.weight.grad is None
    reference = WithUnused()
    opt = aa.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(2):
        x, y = data(step)
        opt.zero_grad()
        loss_of(reference, x, y, "cpu").backward()
        opt.step()
    assert_same(model, reference, "find_unused_parameters")

    # Used on rank 0 only: every rank gets the average, counting the others' zero gradients.
    model = WithUnused().to(device)
    ddp = nn.parallel.DistributedDataParallel(
        model, find_unused_parameters=True, gradient_as_bucket_view=True
    )
    x, y = data(0)
    xs, ys = mine(x, rank, size), mine(y, rank, size)
    out = ddp(aa.tensor(xs, device=device), extra=rank == 0)
    ((out - aa.tensor(ys, device=device)) ** 2).mean().backward()
    reference = WithUnused()
    total = None
    for r in range(size):
        out = reference(aa.tensor(mine(x, r, size)), extra=r == 0)
        loss = ((out - aa.tensor(mine(y, r, size))) ** 2).mean() / size
        total = loss if total is None else total + loss
    total.backward()
    for name, p in model.named_parameters():
        want = dict(reference.named_parameters())[name].grad.numpy()
        assert np.abs(p.grad.cpu().numpy() - want).max() <= TOL, name


def check_buffers_and_sync_batchnorm(rank: int, size: int, device: str) -> None:
    """BatchNorm buffers come from rank 0; SyncBatchNorm equals BatchNorm on the full batch."""
    model = mlp(nn.BatchNorm1d).to(device)
    ddp = nn.parallel.DistributedDataParallel(model)
    train_ddp(ddp, rank, size, device, steps=2)
    mean = model[1].running_mean.cpu().numpy()
    everyone: list = [None] * size
    dist.all_gather_object(everyone, mean.tolist())
    assert size == 1 or any(m != everyone[0] for m in everyone)  # local batches differ
    ddp.eval()  # in eval mode forward changes no statistics, yet still copies rank 0's
    with aa.no_grad():
        ddp(aa.tensor(mine(data(5)[0], rank, size), device=device))
    gathered: list = [None] * size
    dist.all_gather_object(gathered, model[1].running_mean.cpu().numpy().tolist())
    assert all(g == everyone[0] for g in gathered), (gathered, everyone)

    model = nn.SyncBatchNorm.convert_sync_batchnorm(mlp(nn.BatchNorm1d)).to(device)
    assert isinstance(model[1], nn.SyncBatchNorm)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
    train_ddp(ddp, rank, size, device, steps=3)
    assert_same(model, train_reference(mlp(nn.BatchNorm1d), 3), "SyncBatchNorm")


def check_sampler(rank: int, size: int) -> None:
    seen: list = [None] * size
    sampler = DistributedSampler(range(10), shuffle=True, seed=3)
    sampler.set_epoch(1)
    dist.all_gather_object(seen, list(sampler))
    flat = sorted(i for part in seen for i in part)
    assert len(sampler) == -(-10 // size) and len(flat) == len(sampler) * size
    assert set(flat) == set(range(10))


def check_everything(rank: int, size: int, device: str = "cpu") -> None:
    check_training(rank, size, device)
    check_unused(rank, size, device)
    check_buffers_and_sync_batchnorm(rank, size, device)
    check_sampler(rank, size)
