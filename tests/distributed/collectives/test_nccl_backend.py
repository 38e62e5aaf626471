"""The nccl backend on real GPUs (skipped without them): thread ranks, one GPU each."""

from __future__ import annotations

import pytest

import autograd_async as aa
import autograd_async.distributed as dist

from .checks import check_async_handles, check_movement, check_objects, check_reductions

pytestmark = pytest.mark.skipif(
    not (aa.cuda.is_available() and dist.is_nccl_available()), reason="needs a GPU and NCCL"
)


def nccl_checks(rank: int, size: int, device: str) -> int:
    count = check_reductions(rank, size, device) + check_movement(rank, size, device)
    check_objects(rank, size)
    check_async_handles(rank, size, device)
    return count


@pytest.mark.parametrize("gpus", [1, 2])
def test_every_collective_on_nccl_matches_numpy(gpus):
    if aa.cuda.device_count() < gpus:
        pytest.skip(f"needs {gpus} GPUs")
    devices = [f"cuda:{i}" for i in range(gpus)]
    counts = dist.spawn_threads(
        lambda rank: nccl_checks(rank, gpus, devices[rank]), devices, backend="nccl"
    )
    assert min(counts) > 100


def test_ddp_on_nccl_matches_one_process():
    from ...nn.parallel.ddp_checks import check_training

    gpus = min(aa.cuda.device_count(), 2)
    devices = [f"cuda:{i}" for i in range(gpus)]
    dist.spawn_threads(
        lambda rank: check_training(rank, gpus, devices[rank]), devices, backend="nccl"
    )
