"""DistributedDataParallel, SyncBatchNorm and DistributedSampler: N ranks train as one process.

Real processes through the launcher (2 and 3 ranks), and thread ranks on sim devices.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autograd_async as aa
import autograd_async.distributed as dist
import autograd_async.nn as nn
from autograd_async.utils.data import DistributedSampler

from .ddp_checks import check_everything

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.rules_free  # the ranks are processes on cpu: the sim rules change nothing there
@pytest.mark.parametrize("size", [2, 3])
def test_ddp_on_mpi_ranks_matches_one_process_on_the_full_batch(size):
    pytest.importorskip("mpi4py")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograd_async.distributed.run",
            "-n",
            str(size),
            str(Path(__file__).with_name("ddp_rank_main.py")),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in range(size):
        assert f"rank {rank} of {size}: DDP matches one process" in done.stdout


@pytest.mark.parametrize("devices", [["sim:0", "sim:1"], ["sim:1", "cpu", "sim:0"]])
def test_ddp_on_thread_ranks_on_sim_devices(devices):
    dist.spawn_threads(lambda rank: check_everything(rank, len(devices), devices[rank]), devices)


def test_distributed_sampler_shares_and_pads_like_pytorch(torch):
    from torch.utils.data import DistributedSampler as TorchSampler

    for n, replicas, drop_last in [(10, 3, False), (10, 3, True), (2, 4, False), (12, 4, True)]:
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            theirs = TorchSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    shuffled = DistributedSampler(range(20), 2, 0, seed=5)
    first = list(shuffled)
    assert list(shuffled) == first
    shuffled.set_epoch(1)
    assert list(shuffled) != first and sorted(first) != first
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval"):
        DistributedSampler(range(4), 3, 3)


def test_ddp_refuses_a_model_without_trainable_parameters():
    def body(rank: int) -> None:
        with pytest.raises(RuntimeError, match="doesn't have any parameter that requires"):
            nn.parallel.DistributedDataParallel(nn.ReLU())
        model = nn.Linear(2, 2)
        ddp = nn.parallel.DistributedDataParallel(model)
        assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
        assert isinstance(ddp, nn.Module) and ddp.module is model

    dist.spawn_threads(body, ["sim:0"])


def test_convert_sync_batchnorm_keeps_the_state_and_structure():
    aa.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Sequential(nn.BatchNorm2d(2)))
    with aa.no_grad():
        model[1].running_mean.fill_(0.5)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], nn.SyncBatchNorm)
    assert isinstance(converted[2][0], nn.SyncBatchNorm)
    assert converted[1].weight is model[1].weight
    np.testing.assert_array_equal(converted[1].running_mean.numpy(), np.full(4, 0.5))
    assert list(converted.state_dict()) == list(model.state_dict())


def test_buckets_appear_on_a_communication_track_per_rank_with_flows():
    from autograd_async.profiler import profile
    from autograd_async.profiler.chrome_trace import to_chrome_trace

    def body(rank: int) -> int:
        device = f"sim:{rank}"
        with aa.no_grad():
            aa.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
        # 72 bytes: the last layer's weight and bias fill the first bucket, complete before
        # backward reaches the first layer.
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=72 / 2**20)
        assert [len(b.members) for b in ddp.reducer.buckets][0] == 2
        ddp(aa.ones(3, 4, device=device)).sum().backward()
        first, last = ddp.reducer.buckets[0], ddp.reducer.buckets[-1]
        # Overlap: the first bucket was launched before backward reached the last gradient.
        assert first.launched_ns < last.source_ns
        timeline = ddp.reducer.last_timeline
        assert len(timeline.spans) == len(ddp.reducer.buckets)
        assert all(start <= stop for start, stop in timeline.spans)
        assert timeline.spans[0][0] <= timeline.backward_done_ns
        assert 0.0 <= timeline.hidden_share() <= 1.0
        return len(ddp.reducer.buckets)

    with profile() as prof:
        buckets = dist.spawn_threads(body, ["sim:0", "sim:1"])
    trace = to_chrome_trace(prof.events)["traceEvents"]
    names = {e["args"]["name"] for e in trace if e.get("name") == "thread_name"}
    assert {"communication (rank 0)", "communication (rank 1)"} <= names, names
    spans = [e for e in trace if e.get("cat") == "communication" and "bucket" in e["name"]]
    assert len(spans) == 2 * buckets[0] and buckets[0] >= 2
    assert {e["name"] for e in spans} == {f"all_reduce bucket {i}" for i in range(buckets[0])}
    assert all(e["dur"] >= 0 and e["args"]["bytes"] > 0 for e in spans)
    # The collectives DDP's construction ran (parameter broadcasts) are on the tracks too.
    comm = [e["name"] for e in trace if e.get("cat") == "communication"]
    assert any(name.startswith("broadcast #") for name in comm), comm
    starts = [e for e in trace if e.get("cat") == "bucket_ready" and e["ph"] == "s"]
    ends = [e for e in trace if e.get("cat") == "bucket_ready" and e["ph"] == "f"]
    assert len(starts) == len(ends) == len(spans)


def test_bucket_timeline_counts_overlapping_communication_once_and_hides_what_precedes_the_end():
    from autograd_async.nn.parallel.reducer import BucketTimeline

    # Buckets in flight 0-40 and 30-60 (together 0-60), and 100-120; backward ended at 50.
    timeline = BucketTimeline([(0, 40), (30, 60), (100, 120)], backward_done_ns=50)
    assert timeline.communication_ns() == 80
    assert timeline.hidden_ns() == 50
    assert timeline.hidden_share() == pytest.approx(50 / 80)
    assert BucketTimeline([(10, 20)], backward_done_ns=5).hidden_share() == 0.0
    assert BucketTimeline([], backward_done_ns=5).hidden_share() == 1.0
